//! Equivalence of the two builds of each CC: the same pseudo-random sequence
//! of kernel callbacks (ACKs with and without ECE, RTT samples, state
//! changes, cwnd and CE events, ssthresh and undo calls, idle periods) is fed
//! to the userspace build of the Linux adapter and algorithm
//! (`linux::Flow<A>`) and to the BPF build (the CC's object, through its
//! `replay_<cc>` harness program and `BPF_PROG_TEST_RUN`); every output
//! (cwnd, ssthresh, pacing rate, CE-echo actions, return values) and the
//! per-flow state (`CcInfo`) must be identical after every event.
//!
//! Needs root and a kernel with BTF and BPF (the host kernel): run by
//! `userspace/tests/netns.sh bpfcc` as
//! `cargo test --release -p xdcc bpfcc_equivalence -- --ignored`.

use anyhow::{anyhow, bail, Context, Result};
use libbpf_rs::{MapCore, MapFlags};
use xdcc_algo::{
    amrt, dctcp, gemini,
    linux::{CcInfo, CeEcho, Config, Flow, RateSample, Sock, Update},
    oscar, smartt, uno, CongestionControl, NetConfig, Tunables,
};

use crate::bpfcc;

/// `struct xdcc_replay` of shim.c. `e` stays raw bytes (`CeEcho` has bools,
/// which the kernel's copy must not be trusted to keep valid).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Replay {
    kind: u32,
    arg: u32,
    rcv_nxt: u32,
    pending: u32,
    s: Sock,
    rs: RateSample,
    ret: u32,
    pad: u32,
    u: Update,
    e: [u8; 8],
    info: CcInfo,
    pad2: u32,
    flow: [u64; 13],
}

// No implicit padding: every byte is a field (checked by the sum).
const _: () = assert!(std::mem::size_of::<Replay>() == 16 + 48 + 32 + 8 + 16 + 8 + 20 + 4 + 104);
const _: () = assert!(std::mem::size_of::<CeEcho>() == 8);

impl Replay {
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `Replay` is repr(C) with no implicit padding (asserted
        // above) and only integer fields, so every byte is initialized and
        // any byte pattern the kernel writes back is a valid value.
        unsafe { std::slice::from_raw_parts_mut(self as *mut Self as *mut u8, std::mem::size_of::<Self>()) }
    }
}

fn echo_bytes(e: &CeEcho) -> [u8; 8] {
    let a = e.flush_ack_seq.to_ne_bytes();
    [a[0], a[1], a[2], a[3], e.flush as u8, e.flush_ce as u8, e.ack_now as u8, e.demand_cwr as u8]
}

const INIT: u32 = 0;
const ACK: u32 = 1;
const SET_STATE: u32 = 2;
const CWND_EVENT: u32 = 3;
const CE_EVENT: u32 = 4;
const SSTHRESH: u32 = 5;
const UNDO: u32 = 6;
const FLAG_ECE: i32 = 0x40;

/// xorshift64*: a fixed seed gives the same sequence on every machine.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

/// The next event of a plausible (not exact) TCP sender: time moves
/// forward, deliveries accumulate, RTTs wander between µs and 100 ms; ECE
/// on `ece_pct` % of the ACKs (rare ECE reaches what marks gate).
fn next_event(rng: &mut Rng, r: &mut Replay, step: usize, ece_pct: u64) {
    let s = &mut r.s;
    let gap = if rng.chance(2) { 2_000_000 } else { 3_000 };
    s.now_us += 1 + rng.below(gap);
    s.mss = if rng.chance(1) { 0 } else { 1448 };
    if rng.chance(90) {
        let span = if rng.chance(20) { 100_000 } else { 500 };
        s.srtt_us8 = (5 + rng.below(span)) as u32 * 8;
    }
    s.snd_cwnd_clamp = if rng.chance(3) { 10 } else { u32::MAX / 2 };
    s.packets_in_flight = rng.below(200) as u32;
    s.ca_state = if rng.chance(85) { 0 } else { rng.below(5) as u8 };
    s.cwnd_limited = rng.chance(70) as u8;
    s.ecn_ok = rng.chance(95) as u8;
    s.idle_jiffies = if rng.chance(5) { rng.below(1000) as u32 } else { rng.below(3) as u32 };
    s.rto_jiffies = 50 + rng.below(200) as u32;
    s.snd_cwnd = 2 + rng.below(100) as u32;
    // Step 0 is the SYN's ACK, which reaches cong_control before init on
    // the zeroed area (a no-op in both builds); step 1 is init.
    r.kind = if step == 0 {
        ACK
    } else if step == 1 {
        INIT
    } else {
        match rng.below(100) {
            0..=69 => ACK,
            70..=74 => SET_STATE,
            75..=84 => CWND_EVENT,
            85..=91 => CE_EVENT,
            92..=95 => SSTHRESH,
            _ => UNDO,
        }
    };
    match r.kind {
        ACK => {
            let acked = rng.below(12) as u32;
            let span = if rng.chance(10) { 100_000 } else { 400 };
            let rtt = if rng.chance(10) { -1 } else { (1 + rng.below(span)) as i64 };
            s.delivered = s.delivered.wrapping_add(acked);
            r.rs = RateSample {
                send_time_us: s.now_us.saturating_sub(rtt.max(0) as u64),
                rtt_us: rtt,
                acked_sacked: acked,
                prior_delivered: if rng.chance(10) { 0 } else { s.delivered.wrapping_sub(rng.below(300) as u32) },
                is_app_limited: rng.chance(10) as u8,
                _pad: [0; 3],
                flag: if rng.chance(ece_pct) { FLAG_ECE } else { 0 } | (rng.below(4) as i32),
            };
        }
        SET_STATE => r.arg = rng.below(5) as u32,
        CWND_EVENT => r.arg = rng.below(6) as u32,
        CE_EVENT => {
            r.arg = if rng.chance(50) { 4 } else { 5 }; // CA_EVENT_ECN_NO_CE / _IS_CE
            r.rcv_nxt = r.rcv_nxt.wrapping_add(rng.below(20_000) as u32);
            r.pending = rng.chance(50) as u32;
        }
        _ => {}
    }
}

/// Replays `steps` events through both builds; returns the events compared.
fn replay<A>(algo: &str, cfg: &Config<A::Params>, write_cfg: bool, seed: u64, ece_pct: u64, steps: usize) -> Result<usize>
where
    A: CongestionControl,
    A::Params: Tunables,
{
    let mut open = bpfcc::open_object(algo)?;
    for mut m in open.maps_mut() {
        if m.name() == "xdcc_ops" {
            m.set_autocreate(false).context("not creating the struct_ops map")?;
        }
    }
    for mut p in open.progs_mut() {
        let keep = p.name().to_str() == Some(&bpfcc::replay_name(algo));
        p.set_autoload(keep);
    }
    let obj = open.load().with_context(|| format!("loading the replay harness of bpf_{algo}"))?;
    if write_cfg {
        let mut b = [0u8; 256];
        if !cfg.write_bytes(&mut b) {
            bail!("config does not fit");
        }
        obj.maps()
            .find(|m| m.name() == "xdcc_config")
            .ok_or_else(|| anyhow!("no xdcc_config"))?
            .update(&0u32.to_ne_bytes(), &b, MapFlags::ANY)?;
    }
    let prog = obj
        .progs_mut()
        .find(|p| p.name().to_str() == Some(&bpfcc::replay_name(algo)))
        .ok_or_else(|| anyhow!("no replay program"))?;

    let mut rng = Rng(seed);
    let mut ctx = Replay::default();
    // The kernel hands a CC a zeroed private area before init (and the BPF
    // side's replay starts from one).
    // SAFETY: every xdcc `Flow<A>` is plain integers and bools, for which
    // the all-zero pattern is a valid value.
    let mut model: Flow<A> = unsafe { std::mem::zeroed() };
    for step in 0..steps {
        next_event(&mut rng, &mut ctx, step, ece_pct);
        let input = ctx;
        let out = prog
            .test_run(libbpf_rs::ProgramInput { context_in: Some(ctx.bytes_mut()), ..Default::default() })
            .with_context(|| format!("BPF_PROG_TEST_RUN of replay_{algo}"))?;
        if out.return_value != 0 {
            bail!("replay_{algo} returned {} at step {step}", out.return_value);
        }
        let (p, pacing, s) = (&cfg.params, &cfg.pacing, &input.s);
        let flow = &mut model;
        let (mut ret, mut u, mut e) = (0u32, None, None);
        match input.kind {
            INIT => *flow = Flow::new(p, s),
            ACK => u = Some(flow.on_ack(p, pacing, s, &input.rs)),
            SET_STATE => u = flow.on_set_state(p, pacing, s, input.arg as u8),
            CWND_EVENT => u = flow.on_cwnd_event(p, pacing, s, input.arg),
            CE_EVENT => e = flow.on_ce_event(input.arg, input.rcv_nxt, input.pending != 0),
            SSTHRESH => ret = flow.ssthresh_pkts(s),
            UNDO => ret = flow.undo_cwnd_pkts(p, s),
            k => bail!("unknown event kind {k}"),
        }
        if matches!(input.kind, SET_STATE | CWND_EVENT) {
            ret = u.is_some() as u32;
        }
        if input.kind == CE_EVENT {
            ret = e.is_some() as u32;
        }
        let what = |field: &str| format!("bpf_{algo}, seed {seed}, step {step} ({:?} kind {}): {field}", input.s, input.kind);
        if ctx.ret != ret {
            bail!("{}: BPF returned {}, userspace {ret}", what("return value"), ctx.ret);
        }
        if let Some(u) = u {
            if ctx.u != u {
                bail!("{}: BPF {:?}, userspace {u:?}", what("update"), ctx.u);
            }
        }
        if let Some(e) = e {
            if ctx.e != echo_bytes(&e) {
                bail!("{}: BPF {:?}, userspace {e:?}", what("CE echo"), ctx.e);
            }
        }
        if ctx.info != flow.info() {
            bail!("{}: BPF {:?}, userspace {:?}", what("state"), ctx.info, flow.info());
        }
    }
    Ok(steps)
}

/// Both builds, default and a changed configuration, several seeds.
fn check_cc<A>(algo: &str, changed: &[(&str, u64)]) -> Result<usize>
where
    A: CongestionControl,
    A::Params: Tunables,
{
    let default = Config::<A::Params>::for_net(&NetConfig::LINUX_DEFAULT);
    let mut tuned = Config::<A::Params>::for_net(&NetConfig {
        link_rate_bps: 1_000_000_000,
        inter_rtt_ns: 30_000_000,
        ..NetConfig::LINUX_DEFAULT
    });
    for (k, v) in changed {
        tuned.params.set(k, *v).map_err(|e| anyhow!("{e}"))?;
    }
    tuned.pacing.ss_pct = 250;
    let mut n = 0;
    for seed in [1u64, 0x5eed, 0xdead_beef] {
        n += replay::<A>(algo, &default, false, seed, 25, 4000)?;
        n += replay::<A>(algo, &default, false, seed, 1, 4000)?;
        n += replay::<A>(algo, &tuned, true, seed ^ 0x77, 25, 4000)?;
    }
    Ok(n)
}

#[test]
#[ignore = "needs root and a BPF-capable kernel: run by userspace/tests/netns.sh"]
fn bpf_and_userspace_builds_agree_event_by_event() {
    let results = [
        ("uno", check_cc::<uno::Uno>("uno", &[("k_bytes", 30_000), ("phantom_md_scale_q16", 22_938), ("aimd_phantom", 1)])),
        ("gemini", check_cc::<gemini::Gemini>("gemini", &[("beta_q16", 9830)])),
        ("oscar", check_cc::<oscar::Oscar>("oscar", &[("u_ai_q16", 131)])),
        ("smartt", check_cc::<smartt::Smartt>("smartt", &[("gamma_q16", 32768)])),
        ("amrt", check_cc::<amrt::Amrt>("amrt", &[("max_wnd_bdp_q16", 3 * 65536), ("mark_max_qdelay_ns", 0)])),
        ("dctcp", check_cc::<dctcp::Dctcp>("dctcp", &[("shift_g", 2), ("alpha_on_init", 512)])),
    ];
    assert_eq!(results.len(), xdcc_algo::CCS.len(), "a CC of the list is not checked here");
    let mut failed = false;
    for (cc, r) in results {
        match r {
            Ok(n) => println!("bpf_{cc}: {n} events, BPF and userspace builds identical"),
            Err(e) => {
                println!("bpf_{cc}: {e:#}");
                failed = true;
            }
        }
    }
    assert!(!failed, "the BPF and userspace builds differ (above)");
}
