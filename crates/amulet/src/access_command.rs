//! `amulet access` and `amulet token` (docs/security.md): users' roles,
//! roles' grants on maps and logs, bearer tokens, and `amulet whoami`.
//! Changes need the cluster admin role (the `admin` user of `amulet dev`).

use amulet_api::pb;
use amulet_client::Client;
use amulet_smr::{AccessChange, Permission};

/// Users, roles and grants.
#[derive(clap::Subcommand, Clone)]
pub enum AccessOp {
    /// Print users and their roles, roles and their grants, and tokens
    /// (ids, users and expiries; never secrets).
    Show,
    /// Give ROLE PERMISSION (read, write or admin) on MAP, a map or log
    /// name or `*` for every one; replaces what ROLE had there.
    Grant {
        role: String,
        // Not `map`: that is the global --map's id.
        #[arg(value_name = "MAP")]
        on: String,
        #[arg(value_parser = parse_permission)]
        permission: Permission,
    },
    /// Take ROLE's grant on MAP away.
    Revoke {
        role: String,
        #[arg(value_name = "MAP")]
        on: String,
    },
    /// Give USER the role ROLE (`cluster-admin`: everything).
    Assign {
        #[arg(value_name = "USER")]
        name: String,
        role: String,
    },
    /// Take the role ROLE from USER.
    Unassign {
        #[arg(value_name = "USER")]
        name: String,
        role: String,
    },
}

/// Bearer tokens.
#[derive(clap::Subcommand, Clone)]
pub enum TokenOp {
    /// Create a token for USER and print it (once: the cluster keeps only
    /// its digest). Clients send it with `--token` or `AMULET_TOKEN`.
    Create {
        #[arg(value_name = "USER")]
        name: String,
        /// Lifetime in seconds (default a day, at most a year).
        #[arg(long, default_value_t = 86_400)]
        ttl_seconds: u64,
    },
    /// Revoke the token with id ID (the middle part of `amt1.ID.SECRET`).
    Revoke { id: String },
}

fn parse_permission(text: &str) -> Result<Permission, String> {
    Permission::from_name(text).ok_or_else(|| format!("{text:?}: read, write or admin"))
}

/// Runs an access operation.
pub async fn run_access(client: &Client, op: &AccessOp) -> anyhow::Result<()> {
    let change = match op {
        AccessOp::Show => {
            show(&client.access().await?);
            return Ok(());
        }
        AccessOp::Grant {
            role,
            on,
            permission,
        } => AccessChange::Grant {
            role: role.clone(),
            map: on.clone(),
            permission: *permission,
        },
        AccessOp::Revoke { role, on } => AccessChange::Revoke {
            role: role.clone(),
            map: on.clone(),
        },
        AccessOp::Assign { name, role } => AccessChange::AssignRole {
            user: name.clone(),
            role: role.clone(),
        },
        AccessOp::Unassign { name, role } => AccessChange::UnassignRole {
            user: name.clone(),
            role: role.clone(),
        },
    };
    client.change_access(&change).await?;
    println!("done");
    Ok(())
}

/// Runs a token operation.
pub async fn run_token(client: &Client, op: &TokenOp) -> anyhow::Result<()> {
    match op {
        TokenOp::Create {
            name: user,
            ttl_seconds,
        } => {
            let created = client.create_token(user, *ttl_seconds).await?;
            println!("{}", created.token);
            eprintln!(
                "token {} for {user:?}, expires {} (Unix µs); shown once",
                created.id, created.expires_unix_micros
            );
        }
        TokenOp::Revoke { id } => {
            client
                .change_access(&AccessChange::RevokeToken { id: id.clone() })
                .await?;
            println!("revoked token {id}");
        }
    }
    Ok(())
}

/// Prints who the cluster takes the caller for.
pub async fn run_whoami(client: &Client) -> anyhow::Result<()> {
    let who = client.who_am_i().await?;
    if !who.secure {
        println!("nobody in particular: the cluster runs without TLS (--insecure)");
        return Ok(());
    }
    let by = match &who.token {
        Some(id) => format!("token {id}"),
        None => "certificate".to_string(),
    };
    println!(
        "user\t{}\nby\t{by}\nroles\t{}",
        who.user,
        who.roles.join(",")
    );
    Ok(())
}

fn permission_name(value: i32) -> &'static str {
    amulet_api::permission_from_pb(value)
        .map(Permission::name)
        .unwrap_or("?")
}

fn show(access: &pb::AccessConfiguration) {
    println!("version\t{}", access.version);
    for user in &access.users {
        println!("user\t{}\t{}", user.user, user.roles.join(","));
    }
    for role in &access.roles {
        for grant in &role.grants {
            println!(
                "grant\t{}\t{}\t{}",
                role.role,
                grant.map,
                permission_name(grant.permission)
            );
        }
    }
    for token in &access.tokens {
        println!(
            "token\t{}\t{}\texpires {}",
            token.id, token.user, token.expires_unix_micros
        );
    }
}
