//! This process's workers: the dispatcher that claims runs while a slot is free, the listener
//! that routes the bus's cancellations to the runs they name, the heartbeat, the sweeper that
//! requeues the runs of workers whose heartbeat stopped (and stops this worker's runs that
//! another worker's sweeper took back), and graceful shutdown. Running one run is
//! [`super::execute`]'s.

use super::{Manager, RunError};
use crate::bus::CancelAction;
use crate::model::{Run, RunStatus};
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::watch;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

/// How long a cancellation for a run no worker here holds yet is remembered (a pending run
/// cancelled just as it is claimed).
const EARLY_CANCEL_TTL: Duration = Duration::from_secs(60);

impl Manager {
    /// Starts the workers: requeues the runs left `running` (when configured: embedded mode),
    /// listens for cancellations, beats, and claims runs while fewer than `workers` run.
    pub async fn start(&self) -> Result<(), RunError> {
        let inner = &self.inner;
        if inner.config.requeue_on_start {
            let back = inner.queue.requeue(None).await?;
            if !back.is_empty() {
                tracing::info!(runs = back.len(), "requeued the runs left running");
            }
            self.requeued(back);
        }
        let cancels = inner.bus.cancellations().await?;
        let mut tasks = super::lock(&inner.tasks);
        let me = self.clone();
        tasks.spawn(async move { me.route_cancellations(cancels).await });
        let me = self.clone();
        tasks.spawn(async move { me.beat().await });
        let me = self.clone();
        tasks.spawn(async move { me.sweep().await });
        let me = self.clone();
        tasks.spawn(async move { me.dispatch().await });
        inner.working.store(true, Ordering::Release);
        if let Some(every) = inner.config.ttl_sweep.filter(|d| !d.is_zero()) {
            let me = self.clone();
            tasks.spawn(async move { me.sweep_ttls_every(every).await });
        }
        if let Some(every) = inner.config.cron_poll.filter(|d| !d.is_zero()) {
            let me = self.clone();
            tasks.spawn(async move { me.fire_crons_every(every).await });
        }
        Ok(())
    }

    /// Stops claiming, lets the runs in flight go on for the grace period, then stops them and
    /// puts them back in the queue (they resume from their last checkpoint on the next start).
    pub async fn shutdown(&self) {
        let inner = &self.inner;
        inner.stopping.send_replace(true);
        super::lock(&inner.tasks).abort_all();
        let mut runs = inner.runs.lock().await;
        let drained =
            tokio::time::timeout(inner.config.grace, async { while runs.join_next().await.is_some() {} }).await;
        if drained.is_err() {
            runs.abort_all();
            while runs.join_next().await.is_some() {}
        }
        // What this worker still holds goes back to the queue: the runs the grace period cut
        // off, and a run whose claim committed as the dispatcher was stopped (it never started).
        match inner.queue.requeue(Some(&inner.worker_id)).await {
            Ok(back) if back.is_empty() => {}
            Ok(back) => {
                tracing::info!(runs = back.len(), "requeued the runs still running at shutdown");
                self.requeued(back);
            }
            Err(e) => tracing::error!(error = %e, "could not requeue the runs still running at shutdown"),
        }
    }

    /// Claims runs while a slot is free, each run in its own task; waits for a wake (or the poll
    /// interval) when the queue has nothing for it.
    async fn dispatch(&self) {
        let inner = &self.inner;
        let mut stopping = inner.stopping.subscribe();
        loop {
            let Ok(permit) = inner.slots.clone().acquire_owned().await else {
                return;
            };
            if *stopping.borrow_and_update() {
                return;
            }
            match inner.queue.claim(&inner.worker_id).await {
                Ok(Some(run)) => self.spawn_run(run, permit).await,
                Ok(None) => {
                    drop(permit);
                    let idle = self.idle_wait().await;
                    tokio::select! {
                        () = inner.bus.wait_wake(idle) => {}
                        _ = stopping.changed() => return,
                    }
                }
                Err(e) => {
                    drop(permit);
                    tracing::error!(error = %e, "claiming a run failed");
                    tokio::time::sleep(inner.config.poll).await;
                }
            }
        }
    }

    /// Runs a run this worker claimed in a task of its own, which holds `permit` (its slot),
    /// then each run it claims as the last one ends, on the same slot; puts a run back in the
    /// queue instead if this worker began to shut down meanwhile (its runs are drained, or
    /// already put back).
    pub(super) async fn spawn_run(&self, run: Run, permit: OwnedSemaphorePermit) {
        let mut runs = self.inner.runs.lock().await;
        if self.put_back_if_stopping(&run).await {
            return;
        }
        let me = self.clone();
        runs.spawn(async move {
            let mut run = run;
            loop {
                let cancel = me.register(&run.run_id, run.attempt);
                let (run_id, attempt) = (run.run_id.clone(), run.attempt);
                let next = me.execute(run, cancel).await;
                me.unregister(&run_id, attempt);
                match next {
                    Some(next) if !me.put_back_if_stopping(&next).await => run = next,
                    _ => break,
                }
            }
            drop(permit);
        });
        // Reap finished run tasks so the set does not grow.
        while runs.try_join_next().is_some() {}
    }

    /// Puts `run`, claimed by this worker and not started, back in the queue if the worker is
    /// stopping; whether it did.
    async fn put_back_if_stopping(&self, run: &Run) -> bool {
        if !*self.inner.stopping.borrow() {
            return false;
        }
        if let Err(e) = self.inner.queue.set_status(&run.run_id, RunStatus::Pending).await {
            tracing::error!(run_id = %run.run_id, error = %e, "could not put back a run claimed as this worker stopped");
        }
        true
    }

    /// A free slot of this worker, when it runs runs (it was started, and is not stopping)
    /// and one is free now: the run manager then claims the run it makes at once
    /// ([`crate::db::RunQueue::enqueue`]'s `claim`).
    pub(super) fn free_slot(&self) -> Option<OwnedSemaphorePermit> {
        let inner = &self.inner;
        if !inner.working.load(Ordering::Acquire) || *inner.stopping.borrow() {
            return None;
        }
        inner.slots.clone().try_acquire_owned().ok()
    }

    /// How long the dispatcher waits for a wake when the queue has nothing for it: the poll
    /// interval, or less when a delayed run's time comes sooner (its timer: whichever process
    /// queued it, the workers claim it on time, and the poll still catches it if this fails).
    async fn idle_wait(&self) -> Duration {
        let poll = self.inner.config.poll;
        let Ok(Some(due)) = self.inner.queue.next_due().await else {
            return poll;
        };
        let Some(due) = super::execute::parse_time(&due) else {
            return poll;
        };
        let now = weir_runtime::checkpoint::Timestamp::now().unix_micros();
        // A millisecond late rather than early: the claim compares the clock again.
        let wait = Duration::from_micros(due.unix_micros().saturating_sub(now)) + Duration::from_millis(1);
        wait.min(poll)
    }

    /// Remembers the runs `back` put back in the queue (each with the attempt that lost it), for
    /// the attempt that claims each next: it goes on from the run's last checkpoint.
    fn requeued(&self, back: Vec<(String, u32)>) {
        super::lock(&self.inner.requeued).extend(back.into_iter().map(|(run_id, _)| run_id));
    }

    /// The cancel signal of attempt `attempt` of a claimed run, set at once if its cancellation
    /// came before the claim. An earlier attempt of the same run still here loses its signal's
    /// sender, and so stops (its end is refused: the claim is no longer its).
    fn register(&self, run_id: &str, attempt: u32) -> watch::Receiver<Option<CancelAction>> {
        let early = super::lock(&self.inner.early_cancels).remove(run_id).map(|(a, _)| a);
        let (tx, rx) = watch::channel(early);
        super::lock(&self.inner.running).insert(run_id.to_owned(), (attempt, tx));
        rx
    }

    /// Forgets attempt `attempt` of a run, unless a later attempt has replaced it.
    fn unregister(&self, run_id: &str, attempt: u32) {
        let mut running = super::lock(&self.inner.running);
        if running.get(run_id).is_some_and(|(a, _)| *a == attempt) {
            running.remove(run_id);
        }
    }

    /// Routes each cancellation on the bus to the run it names, if it runs here; otherwise keeps
    /// it a while, for a run about to be claimed.
    async fn route_cancellations(&self, mut cancels: futures::stream::BoxStream<'static, (String, CancelAction)>) {
        while let Some((run_id, action)) = cancels.next().await {
            let sent = super::lock(&self.inner.running)
                .get(&run_id)
                .map(|(_, tx)| tx.send_replace(Some(action)))
                .is_some();
            if !sent {
                let mut early = super::lock(&self.inner.early_cancels);
                let now = Instant::now();
                early.retain(|_, (_, at): &mut (CancelAction, Instant)| now.duration_since(*at) < EARLY_CANCEL_TTL);
                early.insert(run_id, (action, now));
            }
        }
    }

    /// How long a heartbeat keeps its worker alive.
    fn heartbeat_ttl(&self) -> Duration {
        Beats::ttl(self.inner.config.heartbeat)
    }

    /// Beats on the bus every `heartbeat`, and records how the beats go ([`Beats`]). Nothing
    /// else happens in this loop: a beat that waited for a busy database (the sweep's queries)
    /// could lapse, and another worker would take this one's runs while they still run.
    async fn beat(&self) {
        let inner = &self.inner;
        let mut tick = tokio::time::interval(inner.config.heartbeat);
        loop {
            tick.tick().await;
            let started = Instant::now();
            let beat = inner.bus.beat(&inner.worker_id, self.heartbeat_ttl()).await;
            if let Err(e) = &beat {
                tracing::warn!(error = %e, "heartbeat failed");
            }
            super::lock(&inner.beats).record(started, Instant::now(), beat.is_ok(), inner.config.heartbeat);
        }
    }

    /// Every `heartbeat`, stops this worker's runs that another worker's sweeper took back,
    /// and requeues the runs of other workers whose heartbeat has expired (their process died).
    /// A heartbeat missing is believed only while this worker's own beats go through on time
    /// and have for a whole time to live ([`Beats::trusted`]), before the question and after its
    /// answer: while the bus is away, or just back, every worker's beats lapse alike, and taking
    /// their runs would run their nodes again for nothing.
    async fn sweep(&self) {
        let inner = &self.inner;
        let mut tick = tokio::time::interval(inner.config.heartbeat);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let trusted = || super::lock(&inner.beats).trusted(inner.config.heartbeat, Instant::now());
        loop {
            tick.tick().await;
            self.stop_runs_taken_back().await;
            if !trusted() {
                continue;
            }
            let Ok(workers) = inner.queue.busy_workers().await else {
                continue;
            };
            for worker in workers.iter().filter(|w| **w != inner.worker_id) {
                // The answer may have waited for a Redis away meanwhile (the other worker's key
                // expired, its beat not yet through): believed only if this worker's beats held.
                let dead = matches!(inner.bus.is_alive(worker).await, Ok(false)) && trusted();
                if !dead {
                    continue;
                }
                if let Ok(back) = inner.queue.requeue(Some(worker)).await {
                    tracing::warn!(worker, runs = back.len(), "requeued the runs of a dead worker");
                    // If it was only slow, its events stop here (its checkpoints and end are
                    // fenced by the queue, and it stops its run within a heartbeat).
                    for (run_id, attempt) in &back {
                        if let Err(e) = inner.bus.supersede(run_id, *attempt).await {
                            tracing::warn!(run_id, attempt, error = %e, "could not fence the stream of a requeued run");
                        }
                    }
                    self.requeued(back);
                    let _ = inner.bus.wake().await;
                }
            }
        }
    }

    /// Stops each run this worker runs whose claim is no longer its own: its heartbeat lapsed
    /// while it was only slow, and another worker's sweeper put the run back in the queue (where
    /// another worker may have claimed it since). Such a run would otherwise go on writing
    /// checkpoints and publishing events beside the new attempt until its graph ended; it stops
    /// within a heartbeat, and its end writes nothing (its end is refused: not its claim). A run
    /// that has just ended holds no claim either: dropping its signal changes nothing.
    async fn stop_runs_taken_back(&self) {
        let inner = &self.inner;
        let mine: Vec<(String, u32)> = super::lock(&inner.running)
            .iter()
            .map(|(run_id, (attempt, _))| (run_id.clone(), *attempt))
            .collect();
        for (run_id, attempt) in mine {
            if let Ok(false) = inner.queue.holds(&run_id, attempt).await {
                tracing::warn!(run_id, attempt, worker = %inner.worker_id, "stopping a run this worker no longer holds (it was requeued)");
                // Its signal's sender dropped, the run stops (unless a later attempt replaced it).
                self.unregister(&run_id, attempt);
            }
        }
    }
}

/// What a worker knows of its own heartbeats, by which it judges whether another's missing one
/// means that worker died or only that the bus was away for everyone.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Beats {
    /// Since when the beats have gone through on time, none failing or late between (`None`:
    /// the last one did).
    on_time_since: Option<Instant>,
    /// When the last beat that went through was sent.
    last: Option<Instant>,
}

impl Beats {
    /// How long a heartbeat sent every `heartbeat` keeps its worker alive: three beats.
    fn ttl(heartbeat: Duration) -> Duration {
        heartbeat * 3
    }

    /// Records a beat sent at `sent` that went through (`through`) or failed, answered at `now`:
    /// on time if it went through within `heartbeat`.
    fn record(&mut self, sent: Instant, now: Instant, through: bool, heartbeat: Duration) {
        if !through {
            self.on_time_since = None;
            return;
        }
        self.last = Some(sent);
        if now.duration_since(sent) <= heartbeat {
            self.on_time_since.get_or_insert(sent);
        } else {
            // Late: the bus was away (a Redis restarting, a primary failing over) until now.
            self.on_time_since = Some(now);
        }
    }

    /// Whether, at `now`, this worker's beats have gone through on time for a whole time to live
    /// ([`Beats::ttl`]) and still do: the last one was sent within two beats (the next is sent a
    /// beat after it, and is late a beat later). A beat held up by a Redis away is not yet
    /// recorded as failed or late; this counts it so while it waits.
    fn trusted(&self, heartbeat: Duration, now: Instant) -> bool {
        let (Some(since), Some(last)) = (self.on_time_since, self.last) else {
            return false;
        };
        now.duration_since(since) >= Beats::ttl(heartbeat) && now.duration_since(last) <= heartbeat * 2
    }
}

/// The runs this process runs: run id → (the attempt, its cancel signal).
pub(super) type Running = HashMap<String, (u32, watch::Sender<Option<CancelAction>>)>;

/// The early cancellations: run id → (action, when it came).
pub(super) type EarlyCancels = HashMap<String, (CancelAction, Instant)>;

#[cfg(test)]
mod tests {
    use super::*;

    const BEAT: Duration = Duration::from_secs(1);

    /// Beats every second from `start`, each answered after `latency`, `n` of them; returns
    /// when the last was sent.
    fn beat(beats: &mut Beats, start: Instant, n: u32, latency: Duration) -> Instant {
        for i in 0..n {
            let sent = start + BEAT * i;
            beats.record(sent, sent + latency, true, BEAT);
        }
        start + BEAT * (n - 1)
    }

    #[test]
    fn beats_are_trusted_once_on_time_for_a_time_to_live() {
        let mut beats = Beats::default();
        let t0 = Instant::now();
        assert!(!beats.trusted(BEAT, t0), "no beat yet");
        let last = beat(&mut beats, t0, 3, Duration::from_millis(5));
        assert!(!beats.trusted(BEAT, last), "two beats' time since the first");
        assert!(beats.trusted(BEAT, t0 + BEAT * 3), "three beats' time since the first");
        let last = beat(&mut beats, t0 + BEAT * 3, 10, Duration::from_millis(5));
        assert!(beats.trusted(BEAT, last + BEAT / 2));
    }

    /// A beat held up by a Redis away is not answered yet: the beats are no longer trusted
    /// once it is later than a beat, though nothing failed or came late so far (the sweep's
    /// question about another worker, answered as Redis came back, is then not believed).
    #[test]
    fn a_beat_waiting_for_an_answer_stops_the_trust_when_it_is_late() {
        let mut beats = Beats::default();
        let t0 = Instant::now();
        let last = beat(&mut beats, t0, 10, Duration::from_millis(5));
        // The next beat is sent at last + BEAT, and hangs.
        assert!(beats.trusted(BEAT, last + BEAT + BEAT / 2), "within its beat");
        assert!(!beats.trusted(BEAT, last + BEAT * 2 + BEAT / 10), "late");
        assert!(!beats.trusted(BEAT, last + BEAT * 8), "Redis away for seconds");
        // It goes through, 6 s late: trusted again only a time to live after.
        let back = last + BEAT * 7;
        beats.record(last + BEAT, back, true, BEAT);
        assert!(!beats.trusted(BEAT, back + BEAT / 2));
        let resumed = beat(&mut beats, back + BEAT, 2, Duration::from_millis(5));
        assert!(
            !beats.trusted(BEAT, resumed),
            "on time for less than three beats since it came back"
        );
        assert!(beats.trusted(BEAT, back + BEAT * 3 + BEAT / 2));
    }

    #[test]
    fn a_failed_beat_stops_the_trust_until_a_time_to_live_of_beats_on_time() {
        let mut beats = Beats::default();
        let t0 = Instant::now();
        let last = beat(&mut beats, t0, 5, Duration::from_millis(5));
        beats.record(last + BEAT, last + BEAT, false, BEAT);
        assert!(!beats.trusted(BEAT, last + BEAT + BEAT / 2));
        let again = last + BEAT * 2;
        beat(&mut beats, again, 4, Duration::from_millis(5));
        assert!(!beats.trusted(BEAT, again + BEAT * 2));
        assert!(beats.trusted(BEAT, again + BEAT * 3));
    }
}
