//! `msclc install`: the default plans the MSCCL++ runtime loads, written
//! where it looks for them, as `python3 -m mscclpp --install` writes them:
//! four multi-node AllReduce plans compiled from the port of the DSL's
//! default algorithm, which is built into msclc, so no Python is needed.

use crate::ir::{Op, Plan};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The port the default plans come from (its `import "std/peers"` resolves
/// to the built-in standard library).
const ALLREDUCE_MULTI_NODES: &str =
    include_str!("../examples/mscclpp/default_algos/allreduce_multi_nodes.mscl");

/// One default plan: its file, and the port's params that make it.
struct DefaultPlan {
    file: &'static str,
    num_gpus: u32,
    thread_block_group: u32,
    min_message_size: u64,
    max_message_size: u64,
}

/// The plans the reference installs, in its order (which matters: see
/// `BarrierIds`).
const DEFAULT_PLANS: &[DefaultPlan] = &[
    DefaultPlan {
        file: "allreduce_2nodes_1K_64K",
        num_gpus: 16,
        thread_block_group: 1,
        min_message_size: 1 << 10,
        max_message_size: 64 << 10,
    },
    DefaultPlan {
        file: "allreduce_2nodes_128K_2M",
        num_gpus: 16,
        thread_block_group: 4,
        min_message_size: 128 << 10,
        max_message_size: 2 << 20,
    },
    DefaultPlan {
        file: "allreduce_4nodes_1K_64K",
        num_gpus: 32,
        thread_block_group: 1,
        min_message_size: 1 << 10,
        max_message_size: 64 << 10,
    },
    DefaultPlan {
        file: "allreduce_4nodes_128K_2M",
        num_gpus: 32,
        thread_block_group: 4,
        min_message_size: 128 << 10,
        max_message_size: 2 << 20,
    },
];

/// The MSCCL++ cache folder: `$MSCCLPP_CACHE_DIR`, else `~/.cache/mscclpp`.
/// The runtime loads default plans from its `default/`.
pub fn default_cache_dir() -> Option<PathBuf> {
    match std::env::var_os("MSCCLPP_CACHE_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        // (An empty HOME is none: it would be the current folder.)
        None => {
            let home = std::env::var_os("HOME").filter(|v| !v.is_empty())?;
            Some(PathBuf::from(home).join(".cache/mscclpp"))
        }
    }
}

/// What `install` did: the plans written, the old plans removed.
pub struct Installed {
    pub dir: PathBuf,
    pub written: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
}

/// Why `install` did nothing.
pub enum Refused {
    /// `default/` holds files that are not plans: the user's, perhaps.
    NotOurs {
        dir: PathBuf,
        entries: Vec<PathBuf>,
        /// Where `dir` is a link: the folder it names, whose plans are
        /// not the runtime's alone either.
        link: Option<PathBuf>,
    },
    Failed(String),
}

/// Writes the default plans into `cache_dir/default`, the folder the
/// runtime loads them from, and then removes the plans that were there
/// before, as `python3 -m mscclpp --install` leaves only its own. That
/// folder is the runtime's: where it holds anything but plan files (`.json`
/// files that hold an execution plan), nothing is touched unless `force`. Each plan is written whole or
/// not at all, before anything is removed: a failure leaves every plan
/// file whole. A `default` that is a link to a folder stays one; the
/// folder it names is shared with whatever else links there, so that
/// nothing in it is removed unless `force`.
pub fn install(cache_dir: &Path, force: bool) -> Result<Installed, Refused> {
    let mut barrier_ids = BarrierIds::default();
    let mut plans = Vec::new();
    for spec in DEFAULT_PLANS {
        let mut plan = compile(spec).map_err(Refused::Failed)?;
        barrier_ids.continue_numbering(&mut plan);
        let mut text = Vec::new();
        crate::back::json::write_plan(&plan, false, &mut text)
            .map_err(|e| Refused::Failed(format!("cannot write {}: {e}", spec.file)))?;
        plans.push((format!("{}.json", spec.file), text));
    }
    install_plans(cache_dir, &plans, force)
}

/// What to do about `e`, where the error kind says: the cache folder is
/// the user's to choose or to open to msclc.
fn fix(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => {
            " (msclc may not write there: make it writable, or give --cache-dir a folder it may write)"
        }
        std::io::ErrorKind::NotADirectory => {
            " (part of that path is a file, not a folder: give --cache-dir a folder)"
        }
        _ => "",
    }
}

/// Writes `plans` (file name, contents) into `cache_dir/default` in place
/// of the plans there, as [`install`] does its own: a set `msclc tune`
/// made, say.
pub fn install_plans(
    cache_dir: &Path,
    plans: &[(String, Vec<u8>)],
    force: bool,
) -> Result<Installed, Refused> {
    let failed = |what: &str, path: &Path, e: std::io::Error| {
        Refused::Failed(format!("cannot {what} {}: {e}{}", path.display(), fix(&e)))
    };
    let dir = cache_dir.join("default");
    let link = std::fs::read_link(&dir).ok();
    match std::fs::metadata(&dir) {
        Ok(m) if !m.is_dir() => {
            return Err(Refused::Failed(format!(
                "{} is a file, not a folder: the runtime loads its plans from a folder there; move the file elsewhere",
                dir.display()
            )))
        }
        Err(_) if link.is_some() => {
            return Err(Refused::Failed(format!(
                "{} is a link to {}, which does not exist: make that folder, or remove the link",
                dir.display(),
                link.as_deref().unwrap_or(&dir).display()
            )))
        }
        _ => {}
    }
    std::fs::create_dir_all(&dir).map_err(|e| failed("create", &dir, e))?;
    let mut before = Vec::new();
    let mut not_plans = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(|e| failed("read", &dir, e))? {
        let entry = entry.map_err(|e| failed("read", &dir, e))?;
        let path = entry.path();
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        let plan_file = is_file
            && path.extension().is_some_and(|x| x == "json")
            && crate::files::holds_json_keys(&path, crate::back::json::PLAN_KEYS);
        // What an install killed while it wrote left behind is its own.
        let ours = plan_file || is_file && crate::files::stale_temporary(&path);
        if ours && link.is_none() {
            before.push(path);
        } else {
            not_plans.push(path);
        }
    }
    if !not_plans.is_empty() && !force {
        not_plans.sort();
        return Err(Refused::NotOurs {
            dir,
            entries: not_plans,
            link,
        });
    }
    let mut written: Vec<PathBuf> = Vec::new();
    for (file, contents) in plans {
        let path = dir.join(file);
        if let Err(e) = crate::files::write(&path, contents) {
            // The plans written stand beside those there before: say which.
            let mut why = format!("cannot write {}: {e}{}", path.display(), fix(&e));
            if !written.is_empty() {
                let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
                why += &format!(
                    "; written before it, beside the plans that were there: {} (run install again once it can write)",
                    names.join(", ")
                );
            }
            return Err(Refused::Failed(why));
        }
        written.push(path);
    }
    let mut removed = Vec::new();
    for path in before.into_iter().chain(not_plans) {
        if written.contains(&path) {
            continue;
        }
        let gone = if path.is_dir() && !path.is_symlink() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        gone.map_err(|e| failed("remove", &path, e))?;
        removed.push(path);
    }
    removed.sort();
    Ok(Installed {
        dir,
        written,
        removed,
    })
}

fn compile(spec: &DefaultPlan) -> Result<Plan, String> {
    let defines: Vec<(String, String)> = [
        ("name", spec.file.to_string()),
        ("num_gpus", spec.num_gpus.to_string()),
        ("gpus_per_node", "8".to_string()),
        ("tbg", spec.thread_block_group.to_string()),
        ("min_message_size", spec.min_message_size.to_string()),
        ("max_message_size", spec.max_message_size.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let path = Path::new("allreduce_multi_nodes.mscl");
    let compiled = crate::driver::compile_source(path, ALLREDUCE_MULTI_NODES.into(), &defines);
    compiled
        .result
        .map_err(|_| format!("the built-in port does not compile for {}", spec.file))
}

/// The reference numbers barriers per rank in one registry for the whole
/// Python process: a thread-block list seen before (in an earlier plan of
/// the same install) keeps its id, a new one takes the next. Plans written
/// together therefore number their barriers after the ones before them,
/// and so do we.
#[derive(Default)]
struct BarrierIds {
    /// Per rank: thread-block list -> id.
    ranks: Vec<HashMap<Vec<u32>, u32>>,
}

impl BarrierIds {
    fn continue_numbering(&mut self, plan: &mut Plan) {
        if self.ranks.len() < plan.ranks.len() {
            self.ranks.resize_with(plan.ranks.len(), HashMap::new);
        }
        for (rank, registry) in plan.ranks.iter_mut().zip(&mut self.ranks) {
            // This plan's own ids, in the order it made them, with their
            // thread blocks.
            let mut lists: Vec<(u32, Vec<u32>)> = Vec::new();
            for (t, tb) in rank.threadblocks.iter().enumerate() {
                for_each_barrier(
                    &tb.ops,
                    &mut |id| match lists.iter_mut().find(|(i, _)| *i == id) {
                        Some((_, tbs)) if tbs.last() != Some(&(t as u32)) => tbs.push(t as u32),
                        Some(_) => {}
                        None => lists.push((id, vec![t as u32])),
                    },
                );
            }
            lists.sort();
            let renumber: HashMap<u32, u32> = lists
                .into_iter()
                .map(|(id, tbs)| {
                    let next = registry.len() as u32;
                    (id, *registry.entry(tbs).or_insert(next))
                })
                .collect();
            for tb in &mut rank.threadblocks {
                renumber_barriers(&mut tb.ops, &renumber);
            }
        }
    }
}

fn for_each_barrier(ops: &[Op], f: &mut dyn FnMut(u32)) {
    for op in ops {
        if let Some((id, _)) = op.barrier {
            f(id);
        }
        for_each_barrier(op.body(), f);
    }
}

fn renumber_barriers(ops: &mut [Op], renumber: &HashMap<u32, u32>) {
    for op in ops {
        if let Some((id, k)) = op.barrier {
            op.barrier = Some((renumber.get(&id).copied().unwrap_or(id), k));
        }
        renumber_barriers(op.body_mut(), renumber);
    }
}
