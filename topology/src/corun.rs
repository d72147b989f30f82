//! Co-running: the pairs of nodes that may run in the same superstep. A pair `(v, v)` means
//! several tasks of `v` in one step (a send target). The analysis over-approximates:
//! - siblings: the targets of two different connections out of one vertex (a fan-out of
//!   edges, an edge beside a route, two routes, a send beside an edge...) run together, so do
//!   any two targets of one multi route, and a send target with itself; the targets of one
//!   single-choice route never do;
//! - parallel branches: when `a` and `b` run together, every successor of `a` runs with every
//!   successor of `b` in the next step, so nodes at the same distance along parallel
//!   branches (up to a join) pair up; when `v` runs several times at once, any two of its
//!   successors pair up, two picks of one route included;
//! - joins: a join's target counts as a successor of its source `a` unless another source
//!   lies after `a`, or after `a`'s partner, once back edges are cut (the join is still
//!   waiting then);
//! - deferred nodes run once every other branch has drained, so they pair only with other
//!   deferred nodes and with send targets.
//!
//! Nodes at the same distance on exclusive paths of single-choice routes do not pair. In
//! loops, cutting back edges may miss a join that fires early on a later lap.

use crate::graph::{Fire, Graph, Group};
use std::collections::HashSet;

impl Graph<'_> {
    /// The pairs of nodes that may run in the same superstep, sorted (see the module docs).
    pub(crate) fn co_running(&self) -> Vec<(usize, usize)> {
        let (back, finished) = self.dfs();
        let mut run = CoRunning {
            g: self,
            desc: self.descendants(&back, &finished),
            groups: (0..self.len()).map(|u| self.groups(u)).collect(),
            sent: self.t.sends.iter().filter_map(|s| self.vertex(&s.to)).collect(),
            pairs: HashSet::new(),
            work: Vec::new(),
        };
        run.siblings();
        run.parallel_branches();
        let mut pairs: Vec<(usize, usize)> = run.pairs.into_iter().collect();
        pairs.sort_unstable();
        pairs
    }
}

/// The state of the analysis: what it knows of the graph, the pairs found, and the pairs whose
/// successors are still to pair up.
struct CoRunning<'g, 't> {
    g: &'g Graph<'t>,
    /// `desc[u][v]`: `v` lies after `u` once back edges are cut.
    desc: Vec<Vec<bool>>,
    /// The connections out of each vertex.
    groups: Vec<Vec<Group>>,
    /// The targets of sends.
    sent: HashSet<usize>,
    pairs: HashSet<(usize, usize)>,
    work: Vec<(usize, usize)>,
}

impl CoRunning<'_, '_> {
    /// Whether join `j`'s target may fire right after its source `u` runs beside `partner`.
    fn join_fires(&self, j: usize, u: usize, partner: Option<usize>) -> bool {
        self.g.t.joins[j]
            .from
            .iter()
            .filter_map(|r| self.g.vertex(r))
            .all(|s| !self.desc[u][s] && partner.is_none_or(|p| !self.desc[p][s]))
    }

    /// The nodes `u` may start in the next step when it runs beside `partner`.
    fn successors(&self, u: usize, partner: Option<usize>) -> Vec<usize> {
        let mut out = Vec::new();
        for g in &self.groups[u] {
            if let Fire::Join(j) = g.fire {
                if !self.join_fires(j, u, partner) {
                    continue;
                }
            }
            out.extend(&g.targets);
        }
        out
    }

    /// Records that `a` and `b` may run together, unless one is deferred and the other is not
    /// a send target; a new pair is queued for its successors.
    fn add(&mut self, a: usize, b: usize) {
        let (da, db) = (self.g.decl(a).defer, self.g.decl(b).defer);
        if da != db
            && !(if da {
                self.sent.contains(&b)
            } else {
                self.sent.contains(&a)
            })
        {
            return;
        }
        let pair = (a.min(b), a.max(b));
        if self.pairs.insert(pair) {
            self.work.push(pair);
        }
    }

    /// Siblings: the targets of two connections out of one vertex, any two targets of one multi
    /// route, a send target with itself.
    fn siblings(&mut self) {
        for u in 0..self.groups.len() {
            let gs: Vec<Group> = self.groups[u]
                .iter()
                .filter(|g| match g.fire {
                    Fire::Join(j) => self.join_fires(j, u, None),
                    _ => true,
                })
                .cloned()
                .collect();
            for (i, g) in gs.iter().enumerate() {
                for h in &gs[i + 1..] {
                    for &a in &g.targets {
                        for &b in h.targets.iter().filter(|&&b| b != a) {
                            self.add(a, b);
                        }
                    }
                }
                match g.fire {
                    Fire::AnyOf => {
                        for (k, &a) in g.targets.iter().enumerate() {
                            for &b in g.targets[k + 1..].iter().filter(|&&b| b != a) {
                                self.add(a, b);
                            }
                        }
                    }
                    Fire::Send => self.add(g.targets[0], g.targets[0]),
                    _ => {}
                }
            }
        }
    }

    /// Parallel branches: the successors of two nodes that run together pair up in the next
    /// step, and any two successors of a node that runs several times at once.
    fn parallel_branches(&mut self) {
        while let Some((a, b)) = self.work.pop() {
            if a == b {
                let next = self.successors(a, None);
                for (k, &x) in next.iter().enumerate() {
                    for &y in next[k + 1..].iter().filter(|&&y| y != x) {
                        self.add(x, y);
                    }
                }
            } else {
                let next_b = self.successors(b, Some(a));
                for x in self.successors(a, Some(b)) {
                    for &y in next_b.iter().filter(|&&y| y != x) {
                        self.add(x, y);
                    }
                }
            }
        }
    }
}
