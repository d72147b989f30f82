//! The saved results of an entrypoint's task calls: what one execution of the entrypoint's task
//! found on its checkpoint, and how it saves each new result there as soon as the call ends.
//!
//! Each call's result is a pending write of its own, task id `<entrypoint task id>~<position>`,
//! channel `__call__`, against the checkpoint the entrypoint's step started from (LangGraph saves
//! a task call as the pending writes of a push task of its own). A resumed step loads them back
//! with the checkpoint, so the entrypoint, re-run from the top, gets the saved results.

use crate::checkpoint::PendingWrite;
use crate::error::Error;
use crate::graph::{Durability, RunInfo};
use crate::pregel::{checkpointer_error, Persist, QueuedWrites, WriterQueue};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The channel of a task call's saved result.
pub(crate) const CALL: &str = "__call__";

/// One task call as saved: which task, a hash of its arguments, and its result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SavedCall {
    pub(crate) task: String,
    pub(crate) args: String,
    pub(crate) result: serde_json::Value,
}

/// The task calls of one execution of an entrypoint's task.
#[derive(Debug)]
pub(crate) struct CallLog {
    /// The entrypoint's task id: each call is saved under `<task>~<position>`.
    task: String,
    saved: Mutex<BTreeMap<String, SavedCall>>,
    saver: Option<CallSaver>,
}

/// Where a call's result is saved: the checkpoint the step started from, through the background
/// writer under async durability (behind the checkpoints it has not stored yet).
struct CallSaver {
    info: Arc<RunInfo>,
    checkpoint: Arc<str>,
    queue: Option<WriterQueue>,
}

impl std::fmt::Debug for CallSaver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallSaver")
            .field("checkpoint", &self.checkpoint)
            .finish()
    }
}

impl CallLog {
    /// The log of the entrypoint task `task` of a run on `p`: the calls saved on the current
    /// checkpoint (taken out of its pending writes), and how to save more. Under exit durability
    /// nothing is saved as a call ends.
    pub(crate) fn load(p: &mut Persist, task: String) -> Self {
        let prefix = format!("{task}~");
        let keys: Vec<String> = p
            .pending
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k.clone())
            .collect();
        let mut saved = BTreeMap::new();
        for key in keys {
            let record = p.pending.remove(&key);
            let call = record
                .and_then(|r| r.call)
                .and_then(|b| serde_json::from_slice(&b).ok());
            if let Some(call) = call {
                saved.insert(key[prefix.len()..].to_owned(), call);
            }
        }
        let saver = match (p.info.durability, &p.current) {
            (Durability::Exit, _) | (_, None) => None,
            (_, Some(checkpoint)) => Some(CallSaver {
                info: p.info.clone(),
                checkpoint: checkpoint.clone(),
                queue: p.queue(),
            }),
        };
        Self {
            task,
            saved: Mutex::new(saved),
            saver,
        }
    }

    /// The call saved at `position`, if any.
    pub(crate) fn saved(&self, position: &str) -> Option<SavedCall> {
        self.saved
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(position)
            .cloned()
    }

    /// Saves the result of the call at `position`.
    ///
    /// # Errors
    /// The checkpointer's failure to store it.
    pub(crate) async fn save(&self, position: &str, call: SavedCall) -> Result<(), Error> {
        let Some(saver) = &self.saver else { return Ok(()) };
        let task_id = format!("{}~{position}", self.task);
        let thread = &saver.info.thread;
        let bytes = serde_json::to_vec(&call).map_err(|e| Error::checkpoint(thread, e.to_string()))?;
        let rows = vec![PendingWrite {
            task_id: task_id.clone(),
            task_path: task_id.clone(),
            idx: 0,
            channel: CALL.to_owned(),
            bytes,
        }];
        self.saved
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(position.to_owned(), call);
        match &saver.queue {
            Some(queue) => {
                let queued = QueuedWrites {
                    ns: saver.info.ns.clone(),
                    checkpoint: saver.checkpoint.clone(),
                    task_id,
                    rows,
                };
                queue.put_writes(queued).await;
                Ok(())
            }
            None => saver
                .info
                .checkpointer
                .put_writes(thread, &saver.info.ns, &saver.checkpoint, &task_id, rows)
                .await
                .map_err(|e| checkpointer_error(thread, e)),
        }
    }
}
