//! Named tunable presets: a set of tunable values, derived from the network,
//! that reproduces a reference setting other than the paper's text.
//!
//! `uno-artifact`: how the public Uno simulator (htsim, spcl/Uno_SC25, its
//! Fig. 3 artifact scripts) runs UnoCC and Gemini, where it differs from the
//! papers (read from the artifact's `sim/` sources and figure scripts;
//! testbed/RESULTS.md, "Uno's load balancing and coding", has the runs):
//!
//! | CC | tunable | paper default | `uno-artifact` |
//! |---|---|---|---|
//! | uno | `aimd_phantom` | 0 | 1: E fell since the last epoch → increase instead of cut |
//! | uno | `k_bytes` | intra-DC BDP / 7 | 6 packets |
//! | uno | `phantom_md_scale_q16` | 0.3 | 0.35 |
//! | uno | `qa_scale_q16`, `qa_period_q16` | 1.0, 1.0 | 0.96, 1.05 |
//! | uno | `qa_vs_current` | 0 | 1: QuickAdapt against the current window |
//! | uno | `max_wnd_bdp_q16` | 0 (no cap) | 1.0: windows capped at one BDP |
//! | uno | `queue_tol_own_rtt` | 0: physical queue = delay above 5.5 % of the intra-DC RTT | 1: above 5.5 % of the flow's own base RTT |
//! | uno | `qa_needs_mark` | 0: QuickAdapt judges every period (the default, 1, judges a period only after marks: real hosts) | 0 |
//! | uno | `unpaced_at_line_rate` | 0: always paced (the default, 1, leaves a flow unpaced from the line rate up: real hosts) | 0 |
//! | gemini | `k_bytes` (only F uses it) | 50 packets/Gbit/s | 6 packets |
//! | gemini | `alpha_gain_q16` | 1/16 | 0.5 |
//! | gemini | `beta_q16` | 0.2 | 0.1 |
//! | gemini | `init_bdp_q16` | 0 (Linux start) | 1.0: one BDP, no slow start |
//! | gemini | `max_wnd_bdp_q16` | 0 | 1.0 |
//! | gemini | `h_rtt_ns` | 0 (own RTT) | the inter-DC RTT: same bytes per RTT for every flow |
//! | gemini | `wan_min_base_rtt_ns` | 0 (all flows) | halfway between intra- and inter-DC RTT: T for inter-DC flows only |
//!
//! `defaults` sets every tunable another preset of the CC sets back to its default (it
//! undoes them all); `paper` does the same and sets the defaults that are not the paper's,
//! a real host's needs, to the paper's values (uno: `qa_needs_mark = 0`, `unpaced_at_line_rate = 0`).
//!
//! `real-host`: UnoCC and OSCAR on a real Linux host at real speed, where
//! the base RTT is microseconds and the pipe holds a few packets:
//!
//! | CC | tunable | paper default | `real-host` |
//! |---|---|---|---|
//! | uno | `fast_increase_epochs` | 0 (off: Algorithm 1) | 3: the reference code's fast increase (`use_fi`, on by default there, threshold 3; its figure scripts turn it off) |
//! | oscar | `target_qdelay_ns` | half the intra-DC RTT (`D_target` = 1.5 base RTTs) | 1.5 × the intra-DC RTT |
//!
//! - uno: at a few-packet BDP the paper's α (0.1 % of a BDP per RTT) regrows one packet in
//!   ~300 round trips, so whatever cuts the window holds it down; fast increase multiplies α by
//!   the run of unmarked epochs. Its price in the simulator is a physical queue, so it is a
//!   preset for real hosts, not the default (evidence: testbed/notes/2026-11-27-presets.md#unocc-real-host).
//! - oscar: on a real host the batches carry the end hosts' delay noise, of the order of the
//!   idle RTT the operator measures, and a target queue below it reads that noise as a queue
//!   (evidence, and the variants tried: testbed/notes/2026-11-27-presets.md#oscar-real-host).
//!
//! Not in a CC preset, because they are not the sender's: the artifact's
//! phantom-queue marking (RED 2–60 % of the phantom size, drain at line rate
//! / 1.05) is a switch profile's, and its Gemini T = 0.1 ms belongs to its
//! 100 Gbit/s network (set `t_ns` for yours). Not reproduced: Gemini's alpha
//! on a base-RTT timer (here per window of ACKs) and its cut at most once
//! per base RTT (here per real RTT).

use super::fixed::ONE;
use super::params::NetConfig;

/// Every preset: (CC, name, one line on what it is).
pub const PRESETS: &[(&str, &str, &str)] = &[
    ("uno", "defaults", "the defaults for what the other presets change"),
    ("uno", "paper", "the paper's UnoCC (uno-sc25 Table 2 and §4.1): the defaults, QuickAdapt without a mark, always paced"),
    ("uno", "uno-artifact", "as the public Uno simulator runs UnoCC (spcl/Uno_SC25, Fig. 3 scripts)"),
    ("uno", "real-host", "UnoCC on a real host at real speed: the reference code's fast increase (few-packet pipes)"),
    ("oscar", "defaults", "the defaults for what real-host changes"),
    ("oscar", "paper", "the paper's defaults (oscar-nsdi26 §4.4) for what real-host changes"),
    ("oscar", "real-host", "OSCAR on a real host at real speed: a target queue of 1.5 intra-DC RTTs, above the host's delay noise"),
    ("gemini", "defaults", "the defaults for what uno-artifact changes"),
    ("gemini", "paper", "the paper's defaults (gemini-ton Table IV) for what uno-artifact changes"),
    ("gemini", "uno-artifact", "as the public Uno simulator runs Gemini (spcl/Uno_SC25 sim/gemini.cpp)"),
];

/// Calls `set(tunable, value)` for each tunable preset `name` of `cc` sets on
/// network `n`. "defaults" sets every tunable that any other preset of the CC
/// sets back to its default for `n` (so it undoes them all); "paper" does the
/// same, then sets the defaults that are not the paper's to the paper's
/// values; the other tunables are left alone. Returns false for an unknown
/// (cc, name): nothing is called then.
pub fn for_each_preset_tunable(cc: &str, name: &str, n: &NetConfig, mut set: impl FnMut(&'static str, u64)) -> bool {
    if !PRESETS.iter().any(|(c, p, _)| *c == cc && *p == name) {
        return false;
    }
    if name == "defaults" || name == "paper" {
        match cc {
            "uno" => {
                let d = super::uno::Params::from_net(n);
                let mut default = |k: &'static str, _: u64| set(k, super::Tunables::get(&d, k).unwrap_or(0));
                uno_artifact(n, &mut default);
                uno_real_host(&mut default);
                if name == "paper" {
                    // The defaults that are a real host's, not the paper's.
                    set("qa_needs_mark", 0);
                    set("unpaced_at_line_rate", 0);
                }
            }
            "gemini" => {
                let d = super::gemini::Params::from_net(n);
                gemini_artifact(n, |k, _| set(k, super::Tunables::get(&d, k).unwrap_or(0)));
            }
            "oscar" => {
                let d = super::oscar::Params::from_net(n);
                oscar_real_host(n, |k, _| set(k, super::Tunables::get(&d, k).unwrap_or(0)));
            }
            _ => {}
        }
        return true;
    }
    match (cc, name) {
        ("uno", "uno-artifact") => uno_artifact(n, set),
        ("uno", "real-host") => uno_real_host(set),
        ("gemini", "uno-artifact") => gemini_artifact(n, set),
        ("oscar", "real-host") => oscar_real_host(n, set),
        _ => {}
    }
    true
}

fn oscar_real_host(n: &NetConfig, mut set: impl FnMut(&'static str, u64)) {
    // (Within the tunable's range, 1 µs ..= 1 s.)
    set("target_qdelay_ns", (n.intra_rtt_ns as u64 * 3 / 2).clamp(1_000, 1_000_000_000));
}

fn uno_real_host(mut set: impl FnMut(&'static str, u64)) {
    set("fast_increase_epochs", 3);
}

fn uno_artifact(n: &NetConfig, mut set: impl FnMut(&'static str, u64)) {
    let one = ONE as u64;
    set("aimd_phantom", 1);
    set("k_bytes", 6 * n.mtu as u64);
    set("phantom_md_scale_q16", one * 35 / 100);
    set("qa_scale_q16", one * 96 / 100);
    set("qa_period_q16", one * 105 / 100);
    set("qa_vs_current", 1);
    set("max_wnd_bdp_q16", one);
    set("queue_tol_own_rtt", 1);
    set("qa_needs_mark", 0);
    set("unpaced_at_line_rate", 0);
}

fn gemini_artifact(n: &NetConfig, mut set: impl FnMut(&'static str, u64)) {
    let one = ONE as u64;
    set("k_bytes", 6 * n.mtu as u64);
    set("alpha_gain_q16", one / 2);
    set("beta_q16", one / 10);
    set("init_bdp_q16", one);
    set("max_wnd_bdp_q16", one);
    set("h_rtt_ns", n.inter_rtt_ns as u64);
    set("wan_min_base_rtt_ns", (n.intra_rtt_ns as u64 + n.inter_rtt_ns as u64) / 2);
}
