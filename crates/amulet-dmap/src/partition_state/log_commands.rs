//! DLog's commands on a partition's logs (thesis §3.5.2, Table 3.2;
//! docs/logs.md): the log half of [`PartitionState::execute`].

use super::{ExecContext, PartitionState};
use crate::log::{Log, Refused};
use crate::{MapCommand, MapError, MapName, MapReply};

impl PartitionState {
    /// DLog's commands (thesis §3.5.2, Table 3.2).
    pub(super) fn execute_on_log(
        &mut self,
        command: &MapCommand,
        ctx: &ExecContext<'_>,
    ) -> Result<MapReply, MapError> {
        use MapCommand::*;
        let unknown = |log: &MapName| MapError::UnknownLog(log.to_string());
        let refused = |log: &MapName, why: Refused, position: u64| match why {
            Refused::Trimmed { first } => MapError::LogTrimmed {
                log: log.to_string(),
                first,
            },
            Refused::PastEnd { end } => MapError::PastLogEnd {
                log: log.to_string(),
                position,
                end,
            },
        };
        let result = self.execute_log_command(command, ctx, unknown, refused);
        // Tailers of this process look again after a change (a read, a
        // bounds query or a refusal changes nothing).
        if result.is_ok() && !matches!(command, ReadLog { .. } | LogBounds { .. }) {
            self.log_changes += 1;
        }
        result
    }

    fn execute_log_command(
        &mut self,
        command: &MapCommand,
        ctx: &ExecContext<'_>,
        unknown: impl Fn(&MapName) -> MapError,
        refused: impl Fn(&MapName, Refused, u64) -> MapError,
    ) -> Result<MapReply, MapError> {
        use MapCommand::*;
        match command {
            CreateLog { log } => {
                if self.logs.contains_key(log) || self.maps.contains_key(log) {
                    return Err(MapError::LogExists(log.to_string()));
                }
                self.logs.insert(log.clone(), Log::default());
                Ok(MapReply::Done)
            }
            DropLog { log } => {
                self.logs.remove(log).ok_or_else(|| unknown(log))?;
                Ok(MapReply::Done)
            }
            Append { log, value } => {
                let entries = self.logs.get_mut(log).ok_or_else(|| unknown(log))?;
                Ok(MapReply::Position(entries.append(value.clone())))
            }
            MultiAppend { appends } => {
                // Every partition involved decides at the same point of
                // the order on the same catalog: all refuse or none does.
                if let Some((log, _)) = appends.iter().find(|(l, _)| !self.logs.contains_key(l)) {
                    return Err(unknown(log));
                }
                let positions = appends
                    .iter()
                    .map(|(log, value)| {
                        let owned = (ctx.owns)(log.as_str(), log.as_str().as_bytes());
                        match self.logs.get_mut(log) {
                            Some(entries) if owned => Some(entries.append(value.clone())),
                            _ => None,
                        }
                    })
                    .collect();
                Ok(MapReply::Positions(positions))
            }
            ReadLog {
                log,
                from,
                max_entries,
            } => {
                let entries = self.logs.get(log).ok_or_else(|| unknown(log))?;
                let read = entries
                    .read(*from, *max_entries as usize, self.limits.log_read_bytes_max)
                    .map_err(|why| refused(log, why, *from))?;
                Ok(MapReply::LogEntries(read))
            }
            TrimLog { log, below } => {
                let entries = self.logs.get_mut(log).ok_or_else(|| unknown(log))?;
                if self.bugs.trim_keeps_entries && *below <= entries.end() {
                    return Ok(MapReply::LogBounds {
                        first: entries.first().max(*below),
                        end: entries.end(),
                    });
                }
                entries
                    .trim(*below)
                    .map_err(|why| refused(log, why, *below))?;
                Ok(MapReply::LogBounds {
                    first: entries.first(),
                    end: entries.end(),
                })
            }
            LogBounds { log } => {
                let entries = self.logs.get(log).ok_or_else(|| unknown(log))?;
                Ok(MapReply::LogBounds {
                    first: entries.first(),
                    end: entries.end(),
                })
            }
            other => unreachable!("not a log command: {other:?}"),
        }
    }
}
