//! The bank on Amulet: a transfer is a transaction (two reads at one read
//! version, two writes, one commit voted by the accounts' partitions); an
//! audit a read-only transaction reading every account with one range
//! read (no commit).

use super::{account_key, Attempt, BankBackend, INITIAL_BALANCE};
use amulet_client::{Client, ClientConfig, Error, KeyBound};
use std::time::Duration;

/// The map the accounts live in.
pub const MAP: &str = "bank";

/// One client's handle (clients share the `connections` clients).
#[derive(Clone)]
pub struct AmuletBank {
    client: Client,
}

impl AmuletBank {
    /// `clients` handles over `connections` clients of the cluster at
    /// `seeds`; creates the map.
    pub async fn connect(
        seeds: &[String],
        clients: usize,
        connections: usize,
        op_timeout: Duration,
    ) -> anyhow::Result<Vec<AmuletBank>> {
        let config = ClientConfig {
            operation_timeout: op_timeout,
            attempt_timeout: op_timeout.min(Duration::from_secs(2)),
            ..Default::default()
        };
        let mut shared = Vec::new();
        for _ in 0..connections.max(1) {
            let client = Client::connect_with(seeds.to_vec(), config.clone()).await?;
            client.create_map_if_absent(MAP).await?;
            shared.push(client);
        }
        Ok((0..clients)
            .map(|i| AmuletBank {
                client: shared[i % shared.len()].clone(),
            })
            .collect())
    }
}

fn balance(value: Option<amulet_client::Bytes>) -> anyhow::Result<i64> {
    let value = value.ok_or_else(|| anyhow::anyhow!("an account is missing"))?;
    Ok(std::str::from_utf8(&value)?.parse()?)
}

fn aborted(error: &Error) -> Option<&'static str> {
    match error {
        Error::Conflict { .. } => Some("conflict"),
        Error::ReadVersionTooOld(_) => Some("too-old"),
        _ => None,
    }
}

impl BankBackend for AmuletBank {
    fn name(&self) -> &str {
        "amulet"
    }

    async fn load(&self, accounts: u64) -> anyhow::Result<()> {
        let map = self.client.map(MAP)?;
        let mut start = 0;
        while start < accounts {
            let end = (start + 1_000).min(accounts);
            map.put_all((start..end).map(|i| (account_key(i), INITIAL_BALANCE.to_string())))
                .await?;
            start = end;
        }
        Ok(())
    }

    async fn transfer(&self, from: u64, to: u64, amount: i64) -> anyhow::Result<Attempt> {
        let tx = self.client.transaction();
        let reads = async {
            let a = balance(tx.get(MAP, account_key(from)).await?)?;
            let b = balance(tx.get(MAP, account_key(to)).await?)?;
            anyhow::Ok((a, b))
        };
        let (a, b) = match reads.await {
            Ok(balances) => balances,
            Err(e) => {
                tx.abandon();
                if let Some(reason) = e.downcast_ref::<Error>().and_then(aborted) {
                    return Ok(Attempt::Aborted(reason));
                }
                return Err(e);
            }
        };
        if a >= amount {
            tx.put(MAP, account_key(from), (a - amount).to_string());
            tx.put(MAP, account_key(to), (b + amount).to_string());
        }
        let commit = crate::clock::now();
        match tx.commit().await {
            Ok(()) => Ok(Attempt::Committed(commit.elapsed())),
            Err(e) => match aborted(&e) {
                Some(reason) => Ok(Attempt::Aborted(reason)),
                None => Err(e.into()),
            },
        }
    }

    async fn audit(&self, accounts: u64) -> anyhow::Result<i64> {
        let tx = self.client.transaction();
        let from = Some(KeyBound {
            key: account_key(0).into(),
            inclusive: true,
        });
        let to = Some(KeyBound {
            key: account_key(accounts).into(),
            inclusive: false,
        });
        let limit = u32::try_from(accounts).unwrap_or(u32::MAX);
        let (entries, more) = tx.range(MAP, from, to, limit, false).await?;
        tx.commit().await?;
        anyhow::ensure!(!more, "an audit's range read was cut short");
        anyhow::ensure!(
            entries.len() as u64 == accounts,
            "an audit saw {} accounts of {accounts}",
            entries.len()
        );
        let mut total = 0;
        for (_, value) in entries {
            total += balance(Some(value))?;
        }
        Ok(total)
    }

    fn partition_of(&self, i: u64) -> u32 {
        self.client
            .partition_map()
            .partition_of(MAP, &account_key(i))
            .map_or(0, |p| p.0)
    }
}
