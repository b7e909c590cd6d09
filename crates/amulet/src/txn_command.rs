//! `amulet txn`: run a small transaction by hand (docs/transactions.md).
//! Each argument is one statement, run in order in one transaction, which
//! commits at the end:
//!
//! ```text
//! amulet txn 'get alice' 'get bob' 'put alice 90' 'put bob 110'
//! amulet txn 'map carts' 'scan a z' 'del stale'
//! ```
//!
//! Statements: `get KEY`, `put KEY VALUE`, `del KEY`, `scan [FROM [TO]]`
//! (FROM inclusive, TO exclusive, at most 1,000 entries), and `map NAME`
//! (the map of the statements after it; `--map` before the first).
//! Reads print what they read at the transaction's read version (its own
//! writes included). With `--retry` a conflict runs the whole script
//! again (printing its reads again); without it a conflict is reported
//! and nothing was written.

use amulet_client::{Bytes, Client, Error, KeyBound, Transaction};

/// Arguments of `amulet txn`.
#[derive(clap::Args, Clone)]
pub struct TxnArgs {
    /// The statements, in order (`-` reads them from stdin, one a line).
    #[arg(required = true)]
    statements: Vec<String>,
    /// Run the script again on a conflict, until it commits or the
    /// timeout passes.
    #[arg(long)]
    retry: bool,
}

/// One statement.
#[derive(Clone, Debug, PartialEq)]
enum Statement {
    Map(String),
    Get(String),
    Put(String, String),
    Del(String),
    Scan(Option<String>, Option<String>),
}

fn parse(line: &str) -> anyhow::Result<Statement> {
    let words: Vec<&str> = line.split_whitespace().collect();
    Ok(match words.as_slice() {
        ["map", name] => Statement::Map(name.to_string()),
        ["get", key] => Statement::Get(key.to_string()),
        ["put", key, value @ ..] if !value.is_empty() => {
            Statement::Put(key.to_string(), value.join(" "))
        }
        ["del", key] => Statement::Del(key.to_string()),
        ["scan"] => Statement::Scan(None, None),
        ["scan", from] => Statement::Scan(Some(from.to_string()), None),
        ["scan", from, to] => Statement::Scan(Some(from.to_string()), Some(to.to_string())),
        _ => anyhow::bail!(
            "cannot read statement {line:?}: use get KEY, put KEY VALUE, del KEY, scan [FROM [TO]] or map NAME"
        ),
    })
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The statements of `args` (stdin for `-`).
fn statements(args: &TxnArgs) -> anyhow::Result<Vec<Statement>> {
    let mut lines = Vec::new();
    for arg in &args.statements {
        if arg == "-" {
            for line in std::io::read_to_string(std::io::stdin())?.lines() {
                let line = line.trim();
                if !line.is_empty() && !line.starts_with('#') {
                    lines.push(line.to_string());
                }
            }
        } else {
            lines.push(arg.clone());
        }
    }
    lines.iter().map(|l| parse(l)).collect()
}

async fn run_script(tx: &Transaction, script: &[Statement], first_map: &str) -> Result<(), Error> {
    let mut map = first_map.to_string();
    for statement in script {
        match statement {
            Statement::Map(name) => map = name.clone(),
            Statement::Get(key) => match tx.get(&map, key.clone()).await? {
                Some(value) => println!("{map}/{key} = {}", show(&value)),
                None => println!("{map}/{key} absent"),
            },
            Statement::Put(key, value) => tx.put(&map, key.clone(), value.clone()),
            Statement::Del(key) => tx.delete(&map, key.clone()),
            Statement::Scan(from, to) => {
                let bound = |k: &Option<String>, inclusive| {
                    k.as_ref().map(|k| KeyBound {
                        key: Bytes::from(k.clone()),
                        inclusive,
                    })
                };
                let (entries, more) = tx
                    .range(&map, bound(from, true), bound(to, false), 1_000, false)
                    .await?;
                for (key, value) in &entries {
                    println!("{map}/{}\t{}", show(key), show(value));
                }
                if more {
                    println!("({map}: more follow)");
                }
            }
        }
    }
    Ok(())
}

/// Runs the transaction.
pub async fn run(client: &Client, first_map: &str, args: &TxnArgs) -> anyhow::Result<()> {
    let script = statements(args)?;
    let outcome = if args.retry {
        client
            .transact(|tx| {
                let script = script.clone();
                let first_map = first_map.to_string();
                async move { run_script(&tx, &script, &first_map).await }
            })
            .await
    } else {
        let tx = client.transaction();
        match run_script(&tx, &script, first_map).await {
            Ok(()) => tx.commit().await,
            Err(e) => {
                tx.abandon();
                Err(e)
            }
        }
    };
    match outcome {
        Ok(()) => {
            println!("committed");
            Ok(())
        }
        Err(e @ Error::Conflict { .. }) => {
            anyhow::bail!("{e}; nothing was written (run it again, or use --retry)")
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_read_and_bad_ones_refused() {
        assert_eq!(parse("get a").unwrap(), Statement::Get("a".into()));
        assert_eq!(
            parse("put a two words").unwrap(),
            Statement::Put("a".into(), "two words".into())
        );
        assert_eq!(parse("del a").unwrap(), Statement::Del("a".into()));
        assert_eq!(parse("scan").unwrap(), Statement::Scan(None, None));
        assert_eq!(
            parse("scan a z").unwrap(),
            Statement::Scan(Some("a".into()), Some("z".into()))
        );
        assert_eq!(parse("map carts").unwrap(), Statement::Map("carts".into()));
        for bad in ["", "get", "put a", "frobnicate a", "scan a b c"] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
