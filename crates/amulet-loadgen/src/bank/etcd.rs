//! The bank on etcd, as its documentation recommends for transactions
//! (the STM pattern with `Txn`): read both accounts (with their
//! mod_revision), then one `Txn` that compares both revisions and puts
//! both balances; a failed compare is a conflict. An audit is one Range
//! over every account (one revision: a consistent snapshot).

use super::{account_key, Attempt, BankBackend, INITIAL_BALANCE};
use anyhow::Context as _;
use etcd_client::{Client, Compare, CompareOp, ConnectOptions, GetOptions, KvClient, Txn, TxnOp};
use std::time::Duration;

/// One client's handle.
#[derive(Clone)]
pub struct EtcdBank {
    kv: KvClient,
}

impl EtcdBank {
    /// `clients` handles over `connections` clients of `endpoints`.
    pub async fn connect(
        endpoints: &[String],
        clients: usize,
        connections: usize,
        op_timeout: Duration,
    ) -> anyhow::Result<Vec<EtcdBank>> {
        let options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(op_timeout);
        let mut kvs = Vec::new();
        for _ in 0..connections.max(1) {
            let c = Client::connect(endpoints, Some(options.clone()))
                .await
                .with_context(|| format!("connecting to etcd at {}", endpoints.join(",")))?;
            kvs.push(c.kv_client());
        }
        Ok((0..clients)
            .map(|i| EtcdBank {
                kv: kvs[i % kvs.len()].clone(),
            })
            .collect())
    }
}

fn parse(value: &[u8]) -> anyhow::Result<i64> {
    Ok(std::str::from_utf8(value)?.parse()?)
}

impl BankBackend for EtcdBank {
    fn name(&self) -> &str {
        "etcd"
    }

    async fn load(&self, accounts: u64) -> anyhow::Result<()> {
        let mut kv = self.kv.clone();
        let mut start = 0;
        while start < accounts {
            // etcd allows 128 operations per Txn by default.
            let end = (start + 100).min(accounts);
            let ops: Vec<TxnOp> = (start..end)
                .map(|i| TxnOp::put(account_key(i), INITIAL_BALANCE.to_string(), None))
                .collect();
            kv.txn(Txn::new().and_then(ops)).await?;
            start = end;
        }
        Ok(())
    }

    async fn transfer(&self, from: u64, to: u64, amount: i64) -> anyhow::Result<Attempt> {
        let mut kv = self.kv.clone();
        let (ka, kb) = (account_key(from), account_key(to));
        let ra = kv.get(ka.clone(), None).await?;
        let rb = kv.get(kb.clone(), None).await?;
        let a = ra.kvs().first().context("an account is missing")?;
        let b = rb.kvs().first().context("an account is missing")?;
        let (va, vb) = (parse(a.value())?, parse(b.value())?);
        if va < amount {
            return Ok(Attempt::Committed(Duration::ZERO));
        }
        let txn = Txn::new()
            .when(vec![
                Compare::mod_revision(ka.clone(), CompareOp::Equal, a.mod_revision()),
                Compare::mod_revision(kb.clone(), CompareOp::Equal, b.mod_revision()),
            ])
            .and_then(vec![
                TxnOp::put(ka, (va - amount).to_string(), None),
                TxnOp::put(kb, (vb + amount).to_string(), None),
            ]);
        let commit = crate::clock::now();
        let reply = kv.txn(txn).await?;
        Ok(if reply.succeeded() {
            Attempt::Committed(commit.elapsed())
        } else {
            Attempt::Aborted("conflict")
        })
    }

    async fn audit(&self, accounts: u64) -> anyhow::Result<i64> {
        let mut kv = self.kv.clone();
        let reply = kv
            .get(
                account_key(0),
                Some(GetOptions::new().with_range(account_key(accounts))),
            )
            .await?;
        anyhow::ensure!(
            reply.kvs().len() as u64 == accounts,
            "an audit saw {} accounts of {accounts}",
            reply.kvs().len()
        );
        let mut total = 0;
        for kv in reply.kvs() {
            total += parse(kv.value())?;
        }
        Ok(total)
    }

    fn partition_of(&self, _: u64) -> u32 {
        0
    }
}
