//! Writeback timing and the dirty ceiling, for the storage stage's
//! `pagecache` part. Background writeback: Kiln writes 2 MiB to an ext4
//! file and never syncs; /proc/meminfo's Dirty must fall to 0 by itself
//! (Linux's defaults, which Kiln's /proc/sys/vm shows: pages 30 s old are
//! written, the thread looks every 5 s), polled once a second with a
//! generous bound, and then, after the ext4 commit interval has passed
//! (5 s; 15 s are given), the power is cut and the host reads the bytes.
//! The dirty ceiling: while the 64 MiB machine of the pressure run writes
//! 192 MiB, a shell loop samples Dirty; its maximum stays under
//! dirty_ratio (20%) of MemTotal plus a slack of [`SLACK_KB`], and again
//! under 5% once `dirty_ratio` is set to 5.

use std::path::Path;

use crate::storagetest::{boot_config, debugfs_cat, mkfs, Checks, VIRTIO};
use crate::{build, Result};

/// Bytes the background-writeback run leaves dirty.
const BACKGROUND_BYTES: usize = 2 << 20;
/// Seconds the guest waits at most for Dirty to reach 0 (Linux: 30-35 s
/// after the write).
const BACKGROUND_BOUND_S: u32 = 180;
/// How far above the ceiling a sample may be: a writer is throttled after
/// the write call that crossed the limit, and busybox `head` writes 4 KiB
/// at a time; 1 MiB is much more than one call.
pub const SLACK_KB: u64 = 1024;

/// A shell function printing Dirty (kB) from /proc/meminfo with builtins
/// only, so a sampling loop forks nothing.
const DIRTY_FN: &str = "dirty() { while read k v u; do [ \"$k\" = Dirty: ] && echo $v; done < /proc/meminfo; }\n";

/// The sampler: `sample NAME &` keeps the largest Dirty seen until /done
/// exists, then prints `dirty max NAME: N kB`.
pub const SAMPLER: &str = "sample() { max=0; while [ ! -e /done ]; do \
    while read k v u; do if [ \"$k\" = Dirty: ] && [ $v -gt $max ]; then max=$v; fi; done < /proc/meminfo; \
    done; echo \"dirty max $1: $max kB\"; }\n";

fn background_script() -> String {
    format!(
        "mount -t ext4 /dev/vda /tmp || exit 1\n\
         {DIRTY_FN}\
         echo \"knobs: expire $(cat /proc/sys/vm/dirty_expire_centisecs) writeback $(cat /proc/sys/vm/dirty_writeback_centisecs)\"\n\
         yes background | head -c {BACKGROUND_BYTES} > /tmp/bg\n\
         echo \"dirty after the write: $(dirty) kB\"\n\
         i=0; while [ $(dirty) -ne 0 ] && [ $i -lt {BACKGROUND_BOUND_S} ]; do sleep 1; i=$((i+1)); done\n\
         echo \"dirty now $(dirty) kB after $i s\"\n\
         sleep 15\n\
         echo '=== start'\n\
         sleep 100\n"
    )
}

fn number_after(out: &str, prefix: &str) -> Option<u64> {
    out.lines()
        .find_map(|l| l.trim().strip_prefix(prefix))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// Dirty pages reach the disk with no fsync, within Linux's expiry.
pub fn background(root: &Path, elf: &Path, smp: u32) -> Result<(u64, u64)> {
    let work = build::out_dir().join("storage");
    let img = work.join("writeback.img");
    let img_s = img.to_str().ok_or("non-UTF-8 path")?.to_string();
    let mut checks = Checks::default();
    let mut check = |ok: bool, what: &str, detail: &str| checks.check(ok, what, detail);
    mkfs(&img_s, None)?;
    let machine = boot_config(root, elf, smp, &img_s, VIRTIO, &background_script(), &work, "512M")?;
    let (out, killed) = crate::crashtest::run_and_cut(&machine, Err(0), &work.join("kiln-writeback.log"))?;
    let out = out.replace('\r', "");
    check(
        out.contains("knobs: expire 3000 writeback 500"),
        "/proc/sys/vm: dirty_expire_centisecs 3000, dirty_writeback_centisecs 500 (Linux's defaults)",
        "kiln-writeback.log",
    );
    let before = number_after(&out, "dirty after the write:").unwrap_or(0);
    let after = number_after(&out, "dirty now");
    let waited = out.lines().find_map(|l| {
        let words: Vec<&str> = l.trim().strip_prefix("dirty now")?.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "after")?;
        words.get(at + 1)?.parse::<u32>().ok()
    });
    let (_, replay) = crate::storagetest::tool(&["/sbin/e2fsck", "-E", "journal_only", "-y", &img_s])?;
    println!("  (host e2fsck -E journal_only: {})", replay.lines().next().unwrap_or("nothing to replay"));
    let want: Vec<u8> = b"background\n".iter().copied().cycle().take(BACKGROUND_BYTES).collect();
    let got = debugfs_cat(&img_s, "/bg")?;
    let (clean, fsck) = crate::storagetest::tool(&["/sbin/e2fsck", "-fn", &img_s])?;
    // Linux writes a page 30 s after it was dirtied, at the thread's next
    // 5 s round: Dirty reaches 0 no sooner than about 25 s after the
    // write ends, and a slow machine only makes that later.
    let in_time = waited.is_some_and(|s| (20..BACKGROUND_BOUND_S).contains(&s));
    check(
        before >= 2000 && after == Some(0) && in_time && killed && got == want && clean,
        &format!(
            "2 MiB written, never synced: Dirty {before} kB falls to 0 by itself after {} s (Linux: 30 s expiry, \
             5 s rounds), and after a power cut 15 s later the host reads every byte (journal replayed, debugfs), \
             e2fsck clean",
            waited.map_or("?".into(), |s| s.to_string())
        ),
        &format!(
            "Dirty before {before} kB, after {after:?} kB, waited {waited:?} s, cut {killed}, debugfs read {} of {} bytes ({}), e2fsck:\n{fsck}",
            got.len(),
            want.len(),
            if got == want { "same" } else { "different" }
        ),
    );
    let _ = std::fs::remove_file(&img);
    Ok(checks.totals())
}

/// The pressure run's lines: the dirty ceilings held. `out` holds
/// `MemTotal:`, `dirty max 20: N kB` and `dirty max 5: N kB`.
pub fn ceiling_checks(out: &str, check: &mut dyn FnMut(bool, &str, &str)) {
    let total = number_after(out, "MemTotal:").unwrap_or(0);
    for ratio in [20u64, 5] {
        let max = number_after(out, &format!("dirty max {ratio}:"));
        let ceiling = total * ratio / 100;
        // The sampler must have seen the writer's dirty pages (a quarter
        // of the ceiling at least), or it proves nothing.
        let ok = max.is_some_and(|m| m >= ceiling / 4 && m <= ceiling + SLACK_KB);
        check(
            ok,
            &format!(
                "dirty_ratio {ratio}: while one writer fills the cache, Dirty peaks at {} kB, under {ratio}% of MemTotal \
                 ({ceiling} kB) + {SLACK_KB} kB",
                max.map_or("?".into(), |m| m.to_string())
            ),
            &format!("MemTotal {total} kB, max Dirty {max:?} kB (see kiln-pressure.log)"),
        );
    }
}
