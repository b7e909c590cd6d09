//! Range scans streamed page by page (docs/dynatree.md, "Range scans"):
//! the B+tree surface's range scan over a map of many partitions, read a
//! page at a time instead of in one reply. Each page is one linearizable
//! `range` read bounded by the end of the range partition its first key
//! falls in (by the client's map), so it is ordered on that partition's
//! stream alone, not on the global one with every partition of the
//! scan; the next page starts after the last key read, or at the next
//! range's first key. A map not in ranges is read a page at a time over
//! all its partitions.
//!
//! The scan as a whole is not one point of the order: a key written
//! behind the scan's position is not seen, one written ahead is. For a
//! consistent view of the whole map, open a [`crate::DMap::snapshot`].
//! A split or merge between pages costs nothing: a page's bounds come
//! from the map at that page, and a page built on a map gone stale spans
//! the new partitions and is ordered on the global stream, still exact.

use crate::map::Entry;
use crate::{DMap, Error};
use amulet_dmap::KeyBound;
use amulet_smr::Layout;
use bytes::Bytes;

/// A range scan in progress (see [`DMap::scan`]).
pub struct Scan {
    map: DMap,
    /// Where the next page starts (`None`: the map's first key).
    from: Option<KeyBound>,
    /// Where the scan ends (`None`: past the map's last key).
    to: Option<KeyBound>,
    page: u32,
    done: bool,
    pages: u64,
}

impl DMap {
    /// The entries between `from` and `to` (either open) in ascending
    /// key order, read `page` entries at a time with
    /// [`Scan::next_page`]. See the module's documentation.
    pub fn scan(&self, from: Option<KeyBound>, to: Option<KeyBound>, page: u32) -> Scan {
        Scan {
            map: self.clone(),
            from,
            to,
            page: page.max(1),
            done: false,
            pages: 0,
        }
    }
}

impl Scan {
    /// The next page in key order, at most `page` entries and never
    /// empty; `None` once the scan has passed `to`.
    pub async fn next_page(&mut self) -> Result<Option<Vec<Entry>>, Error> {
        while !self.done {
            let cut = self.range_end();
            // The page ends at the partition's end when that comes first.
            let (to, continues_at) = match (&self.to, cut) {
                (Some(to), Some(cut)) if to.key < cut || (to.key == cut && !to.inclusive) => {
                    (Some(to.clone()), None)
                }
                (_, Some(cut)) => (
                    Some(KeyBound {
                        key: cut.clone(),
                        inclusive: false,
                    }),
                    Some(cut),
                ),
                (to, None) => (to.clone(), None),
            };
            let (entries, more) = self
                .map
                .range(self.from.clone(), to, self.page, false)
                .await?;
            self.pages += 1;
            if let Some((last, _)) = entries.last() {
                self.from = Some(KeyBound {
                    key: last.clone(),
                    inclusive: false,
                });
            }
            if !more {
                match continues_at {
                    Some(cut) => {
                        self.from = Some(KeyBound {
                            key: cut,
                            inclusive: true,
                        })
                    }
                    None => self.done = true,
                }
            }
            if !entries.is_empty() {
                return Ok(Some(entries));
            }
        }
        Ok(None)
    }

    /// Range reads sent so far (one per page, and one per range found
    /// empty).
    pub fn reads(&self) -> u64 {
        self.pages
    }

    /// The first key of the range after the one the next page starts in,
    /// by the client's map; `None` for a map not in ranges, or from the
    /// last range on.
    fn range_end(&self) -> Option<Bytes> {
        let map = self.map.client().partition_map();
        let Some(Layout::Range(ranges)) = map.keyspaces.get(self.map.name().as_str()) else {
            return None;
        };
        let start = self.from.as_ref().map(|b| &b.key[..]);
        amulet_smr::next_range_start(ranges, start).cloned()
    }
}
