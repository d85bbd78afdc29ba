// SPDX-License-Identifier: GPL-2.0
/*
 * BPF struct_ops shim of one xdcc congestion control (XDCC_CC = uno, gemini,
 * oscar or smartt; registered as "bpf_<cc>"). It only reads kernel fields
 * into the Linux adapter's plain values (struct xdcc_sock, xdcc_rate_sample)
 * and writes the results back: the logic is kmods/algo/src/linux.rs and the
 * algorithm file, compiled from Rust (entry.rs) and inlined here by
 * build.sh. Models: the kernel's selftests bpf_dctcp.c and bpf_cubic.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

char _license[] SEC("license") = "GPL";

#define CAT3(a, b, c) a##b##c
#define XCAT3(a, b, c) CAT3(a, b, c)
#define ENTRY(name) XCAT3(xdcc_, XDCC_CC, _##name)
#define STR(x) #x
#define XSTR(x) STR(x)

#define TCP_ECN_OK 1
#define TCP_ECN_DEMAND_CWR 4
#define ICSK_ACK_TIMER 2
#define ICSK_ACK_NOW 8
#define SK_PACING_NEEDED 1
#define TCP_CONG_NON_RESTRICTED 0x1
#define TCP_CONG_NEEDS_ECN 0x2
/* The kernel's private CC area, from its BTF; the algorithm crate sizes every
 * state for ICSK_CA_PRIV_SIZE (kmods/algo/src/lib.rs), which build.sh passes
 * as XDCC_CA_PRIV_SIZE. */
#define CA_PRIV_SIZE sizeof(((struct inet_connection_sock *)0)->icsk_ca_priv)
#if !defined(XDCC_CA_PRIV_SIZE) || !defined(XDCC_CONFIG_BYTES)
#error "build.sh passes XDCC_CA_PRIV_SIZE and XDCC_CONFIG_BYTES (from the algorithm crate)"
#endif
_Static_assert(CA_PRIV_SIZE == XDCC_CA_PRIV_SIZE,
	       "this kernel's icsk_ca_priv is not the size the algorithm crate sizes states for");

/* Mirrors of the adapter's #[repr(C)] structs (algo/src/linux.rs). */
struct xdcc_sock {
	__u64 now_us;
	__u32 mss, srtt_us8, snd_cwnd_clamp, delivered, packets_in_flight;
	__u8 ca_state, cwnd_limited, ecn_ok, pad;
	__u32 idle_jiffies, rto_jiffies, snd_cwnd, pad2;
};
struct xdcc_rate_sample {
	__u64 send_time_us;
	__s64 rtt_us;
	__u32 acked_sacked, prior_delivered;
	__u8 is_app_limited, pad[3];
	__s32 flag;
};
struct xdcc_update {
	__u32 cwnd_pkts, ssthresh_pkts;
	__u64 pacing_rate;
};
struct xdcc_ce_echo {
	__u32 flush_ack_seq;
	__u8 flush, flush_ce, ack_now, demand_cwr;
};
/* linux::CcInfo: what `xdcc flows` shows of the CC's per-flow state. */
struct xdcc_cc_info {
	__u8 version, flags, rtos, recoveries;
	__u32 values[4];
};
/* One record of the flow iterator (xdcc_flows below). Addresses in network
 * byte order, IPv4 as v4-mapped IPv6; ports in host order. */
struct xdcc_flow_record {
	__u8 saddr[16], daddr[16];
	__u16 sport, dport;
	__u32 state;
	struct xdcc_cc_info info;
};
/* The algorithm's Params followed by the pacing ratios; opaque here. */
struct xdcc_config {
	__u8 bytes[XDCC_CONFIG_BYTES]; /* linux.rs checks every Config fits */
};

/* Tunables: one element, replaced atomically by `xdcc tunable set`
 * (a hash map without preallocation: an update swaps in a new element and
 * frees the old one after an RCU grace period, so an ACK never reads a
 * half-written set; struct_ops programs run under rcu_read_lock()). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct xdcc_config);
} xdcc_config SEC(".maps");

/* Scratch space for the default configuration (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdcc_config);
} xdcc_scratch SEC(".maps");

/*
 * Per-ACK trace (`xdcc cc trace <cc>`): while element 0 of xdcc_trace_on is
 * not 0, every cong_control call writes one record to the xdcc_trace ring
 * buffer: what the ACK carried, the window and rate before and after the
 * algorithm ran (not the algorithm's own state: reading it here took
 * OSCAR's cong_control past the 512-byte stack limit, and as a global
 * function call quadrupled the verifier's work; `xdcc flows` shows it). Off,
 * an ACK pays one array lookup. A full ring drops records; the next record
 * written on that CPU says how many (`dropped`), so the reader can count them.
 */
struct xdcc_trace_rec {
	__u64 now_us;
	__u64 pacing_rate; /* after, bytes/s */
	__u32 dropped;     /* records this CPU could not write since its last one */
	__u16 sport, dport;
	__s32 rtt_us;      /* the ACK's RTT sample; -1: none */
	__u32 srtt_us;
	__u32 acked_sacked;
	__u32 in_flight;   /* before the ACK's new data */
	__u32 cwnd_before, cwnd_after, ssthresh_after;
	__u8 ece, app_limited, cwnd_limited, ca_state;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} xdcc_trace SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xdcc_trace_on SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xdcc_trace_dropped SEC(".maps");

extern void ENTRY(init)(void *flow, const void *cfg, const struct xdcc_sock *s);
extern void ENTRY(cong_control)(void *flow, const void *cfg, const struct xdcc_sock *s,
				const struct xdcc_rate_sample *rs, struct xdcc_update *out);
extern __u32 ENTRY(set_state)(void *flow, const void *cfg, const struct xdcc_sock *s,
			      __u32 new_state, struct xdcc_update *out);
extern __u32 ENTRY(cwnd_event)(void *flow, const void *cfg, const struct xdcc_sock *s,
			       __u32 ev, struct xdcc_update *out);
extern __u32 ENTRY(ce_event)(void *flow, __u32 ev, __u32 rcv_nxt, __u32 pending,
			     struct xdcc_ce_echo *out);
extern __u32 ENTRY(ssthresh)(const void *flow, const struct xdcc_sock *s);
extern __u32 ENTRY(undo_cwnd)(void *flow, const void *cfg, const struct xdcc_sock *s);
extern void ENTRY(info)(const void *flow, struct xdcc_cc_info *out);
extern void ENTRY(default_config)(void *cfg);

/*
 * Global BPF functions for the algorithm crate's branchy arithmetic
 * (algo/src/fixed.rs, `bpf_global`). The verifier checks a global function
 * once, on its own, and treats each call as returning an unknown scalar;
 * inlined at every call site, these helpers multiplied the paths through
 * cong_control past the verifier's 1M-instruction budget. They are C only so
 * that they carry BTF; the bodies are the crate's (entry.rs).
 */
extern __u64 xdcc_mul_sat_body(__u64 a, __u64 b);
extern __u64 xdcc_mul_div_body(__u64 a, __u64 b, __u64 c);
extern __s64 xdcc_slope_q16_body(__s64 n, __s64 sum_x, __s64 sum_y, __s64 sum_xx, __s64 sum_xy);

__attribute__((noinline)) __u64 xdcc_mul_sat(__u64 a, __u64 b)
{
	return xdcc_mul_sat_body(a, b);
}

__attribute__((noinline)) __u64 xdcc_mul_div(__u64 a, __u64 b, __u64 c)
{
	return xdcc_mul_div_body(a, b, c);
}

__attribute__((noinline)) __s64 xdcc_slope_q16(__s64 n, __s64 sum_x, __s64 sum_y, __s64 sum_xx, __s64 sum_xy)
{
	return xdcc_slope_q16_body(n, sum_x, sum_y, sum_xx, sum_xy);
}

#ifdef XDCC_ACK_FULL
/*
 * The CC's complete ACK processing as a global BPF function (UnoCC:
 * uno.rs, `bpf_global`), for the same reason: the ACK handler's fast path
 * calls it, and the verifier checks it once instead of once per path of its
 * caller. Its arguments are memory of their types' sizes: the private area
 * (the algorithm's state comes first), the configuration (its params come
 * first) and the ACK sample (entry.rs checks the three).
 */
struct xdcc_priv {
	__u64 words[CA_PRIV_SIZE / 8];
};
#ifndef XDCC_ACK_SAMPLE_BYTES
#error "build.sh passes XDCC_ACK_SAMPLE_BYTES (ACK_SAMPLE_BYTES in entry.rs)"
#endif
struct xdcc_ack_sample {
	__u64 words[XDCC_ACK_SAMPLE_BYTES / 8];
};
extern void ENTRY(ack_full_body)(struct xdcc_priv *flow, const struct xdcc_config *cfg,
				 const struct xdcc_ack_sample *s);

__attribute__((noinline)) int ENTRY(ack_full)(struct xdcc_priv *flow, const struct xdcc_config *cfg,
					      const struct xdcc_ack_sample *s)
{
	/* (a global function's pointer arguments may be NULL to the verifier) */
	if (!flow || !cfg || !s)
		return 0;
	ENTRY(ack_full_body)(flow, cfg, s);
	return 0;
}
#endif

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

/* The configuration; the defaults until userspace has written one. NULL
 * only if the per-CPU scratch lookup fails, which it cannot for index 0. */
static __always_inline const void *xdcc_cfg(void)
{
	__u32 key = 0;
	struct xdcc_config *c = bpf_map_lookup_elem(&xdcc_config, &key);

	if (c)
		return c;
	c = bpf_map_lookup_elem(&xdcc_scratch, &key);
	if (c)
		ENTRY(default_config)(c);
	return c;
}

static __always_inline void read_sock(struct sock *sk, struct xdcc_sock *s)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct inet_connection_sock *icsk = inet_csk(sk);
	__u32 in_flight = tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
	bool slow_start = tp->snd_cwnd < tp->snd_ssthresh;

	s->now_us = tp->tcp_mstamp;
	s->mss = tp->mss_cache;
	s->srtt_us8 = tp->srtt_us;
	s->snd_cwnd_clamp = tp->snd_cwnd_clamp;
	s->delivered = tp->delivered;
	s->packets_in_flight = in_flight;
	s->ca_state = BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
	/* tcp_is_cwnd_limited() */
	s->cwnd_limited = BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited) ||
			  (slow_start && tp->snd_cwnd < 2 * tp->max_packets_out);
	s->ecn_ok = (tp->ecn_flags & TCP_ECN_OK) != 0;
	s->pad = 0;
	s->idle_jiffies = (__u32)bpf_jiffies64() - tp->lsndtime;
	s->rto_jiffies = icsk->icsk_rto;
	s->snd_cwnd = tp->snd_cwnd;
	s->pad2 = 0;
}

static __always_inline void apply(struct sock *sk, const struct xdcc_update *u)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (u->cwnd_pkts)
		tp->snd_cwnd = u->cwnd_pkts;
	if (u->ssthresh_pkts)
		tp->snd_ssthresh = u->ssthresh_pkts;
	if (u->pacing_rate)
		sk->sk_pacing_rate = u->pacing_rate;
}

#define FLAG_ECE 0x40

/* One xdcc_trace record for this ACK, if tracing is on (see xdcc_trace). */
static __always_inline void trace_ack(struct sock *sk, const struct xdcc_sock *s,
				      const struct xdcc_rate_sample *r)
{
	__u32 key = 0, *on = bpf_map_lookup_elem(&xdcc_trace_on, &key), *dropped;
	struct tcp_sock *tp = tcp_sk(sk);
	struct xdcc_trace_rec *t;

	if (!on || !*on)
		return;
	dropped = bpf_map_lookup_elem(&xdcc_trace_dropped, &key);
	if (!dropped)
		return;
	t = bpf_ringbuf_reserve(&xdcc_trace, sizeof(*t), 0);
	if (!t) {
		*dropped += 1;
		return;
	}
	t->now_us = s->now_us;
	t->pacing_rate = sk->sk_pacing_rate;
	t->dropped = *dropped;
	*dropped = 0;
	t->sport = sk->__sk_common.skc_num;
	t->dport = bpf_ntohs(sk->__sk_common.skc_dport);
	t->rtt_us = r->rtt_us > 0x7fffffff ? 0x7fffffff : (__s32)r->rtt_us;
	t->srtt_us = s->srtt_us8 >> 3;
	t->acked_sacked = r->acked_sacked;
	t->in_flight = s->packets_in_flight;
	t->cwnd_before = s->snd_cwnd;
	t->cwnd_after = tp->snd_cwnd;
	t->ssthresh_after = tp->snd_ssthresh;
	t->ece = (r->flag & FLAG_ECE) != 0;
	t->app_limited = r->is_app_limited;
	t->cwnd_limited = s->cwnd_limited;
	t->ca_state = s->ca_state;
	bpf_ringbuf_submit(t, 0);
}

/* The CA private area is copied to the stack around each call into Rust
 * and back (plain stack memory for the algorithm's loads and stores). */
#define WITH_PRIV(sk, flow) \
	__u64 flow[CA_PRIV_SIZE / 8]; \
	__builtin_memcpy(flow, inet_csk(sk)->icsk_ca_priv, CA_PRIV_SIZE)
#define PUT_PRIV(sk, flow) __builtin_memcpy(inet_csk(sk)->icsk_ca_priv, flow, CA_PRIV_SIZE)

SEC("struct_ops")
void BPF_PROG(xdcc_init, struct sock *sk)
{
	const void *cfg = xdcc_cfg();
	struct xdcc_sock s;
	WITH_PRIV(sk, flow);

	if (!cfg)
		return;

	read_sock(sk, &s);
	ENTRY(init)(flow, cfg, &s);
	PUT_PRIV(sk, flow);
	/* tcp_request_pacing(): TCP paces internally once asked to. */
	if (sk->sk_pacing_status != SK_PACING_NEEDED)
		sk->sk_pacing_status = SK_PACING_NEEDED;
}

SEC("struct_ops")
void BPF_PROG(xdcc_cong_control, struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs)
{
	const void *cfg = xdcc_cfg();
	struct xdcc_sock s;
	struct xdcc_rate_sample r;
	struct xdcc_update u;
	WITH_PRIV(sk, flow);

	if (!cfg)
		return;

	read_sock(sk, &s);
	r.send_time_us = tcp_sk(sk)->first_tx_mstamp;
	r.rtt_us = rs->rtt_us;
	r.acked_sacked = rs->acked_sacked;
	r.prior_delivered = rs->prior_delivered;
	r.is_app_limited = rs->is_app_limited;
	r.pad[0] = r.pad[1] = r.pad[2] = 0;
	r.flag = flag;
	ENTRY(cong_control)(flow, cfg, &s, &r, &u);
	PUT_PRIV(sk, flow);
	apply(sk, &u);
	trace_ack(sk, &s, &r);
}

SEC("struct_ops")
void BPF_PROG(xdcc_set_state, struct sock *sk, __u8 new_state)
{
	const void *cfg = xdcc_cfg();
	struct xdcc_sock s;
	struct xdcc_update u;
	WITH_PRIV(sk, flow);

	if (!cfg)
		return;

	read_sock(sk, &s);
	if (ENTRY(set_state)(flow, cfg, &s, new_state, &u)) {
		PUT_PRIV(sk, flow);
		apply(sk, &u);
	}
}

SEC("struct_ops")
void BPF_PROG(xdcc_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	const void *cfg = xdcc_cfg();
	struct xdcc_sock s;
	struct xdcc_update u;
	WITH_PRIV(sk, flow);

	if (!cfg)
		return;

#if XDCC_NEEDS_ECN
	struct xdcc_ce_echo e;
	struct tcp_sock *tp = tcp_sk(sk);

	if (ENTRY(ce_event)(flow, ev, tp->rcv_nxt,
			    (inet_csk(sk)->icsk_ack.pending & ICSK_ACK_TIMER) != 0, &e)) {
		PUT_PRIV(sk, flow);
		if (e.flush) {
			if (e.flush_ce)
				tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
			else
				tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
			bpf_tcp_send_ack(tp, e.flush_ack_seq);
		}
		if (e.ack_now)
			inet_csk(sk)->icsk_ack.pending |= ICSK_ACK_NOW;
		if (e.demand_cwr)
			tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
		else
			tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
		return;
	}
#endif
	read_sock(sk, &s);
	if (ENTRY(cwnd_event)(flow, cfg, &s, ev, &u)) {
		PUT_PRIV(sk, flow);
		apply(sk, &u);
	} else {
		/* An idle restart changes the algorithm's state too. */
		PUT_PRIV(sk, flow);
	}
}

SEC("struct_ops")
__u32 BPF_PROG(xdcc_ssthresh, struct sock *sk)
{
	struct xdcc_sock s;
	WITH_PRIV(sk, flow);

	read_sock(sk, &s);
	return ENTRY(ssthresh)(flow, &s);
}

SEC("struct_ops")
__u32 BPF_PROG(xdcc_undo_cwnd, struct sock *sk)
{
	const void *cfg = xdcc_cfg();
	struct xdcc_sock s;
	__u32 cwnd;
	WITH_PRIV(sk, flow);

	if (!cfg)
		return tcp_sk(sk)->snd_cwnd;
	read_sock(sk, &s);
	cwnd = ENTRY(undo_cwnd)(flow, cfg, &s);
	PUT_PRIV(sk, flow);
	return cwnd;
}

/*
 * Flow iterator ("flows_<cc>"): one xdcc_flow_record per TCP socket of the
 * reader's network namespace that runs this CC (what get_info gives a
 * module; struct_ops CCs have no get_info). `xdcc cc load --bpf` pins a link
 * as /sys/fs/bpf/xdcc/bpf_<cc>/flows, which keeps the program alive; each
 * read of that file walks the sockets afresh. `xdcc flows` finds the program
 * by name instead, as `ip netns exec` hides the host's /sys/fs/bpf.
 */
#define AF_INET6 10
#define TCP_LISTEN 10

static const char xdcc_name[] = "bpf_" XSTR(XDCC_CC);

SEC("iter/tcp")
int XCAT3(flows_, XDCC_CC, )(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct xdcc_flow_record rec = {};
	const struct tcp_congestion_ops *ops;
	struct tcp_sock *tp;
	char name[sizeof(xdcc_name)];
	__u64 flow[CA_PRIV_SIZE / 8];

	if (!skc)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp || skc->skc_state == TCP_LISTEN)
		return 0;
	ops = tp->inet_conn.icsk_ca_ops;
	if (!ops || bpf_probe_read_kernel(name, sizeof(name), ops->name))
		return 0;
	for (int i = 0; i < sizeof(name); i++)
		if (name[i] != xdcc_name[i])
			return 0;
	if (bpf_probe_read_kernel(flow, sizeof(flow), tp->inet_conn.icsk_ca_priv))
		return 0;
	if (skc->skc_family == AF_INET6) {
		bpf_probe_read_kernel(rec.saddr, 16, &skc->skc_v6_rcv_saddr);
		bpf_probe_read_kernel(rec.daddr, 16, &skc->skc_v6_daddr);
	} else {
		rec.saddr[10] = rec.saddr[11] = rec.daddr[10] = rec.daddr[11] = 0xff;
		__builtin_memcpy(&rec.saddr[12], &skc->skc_rcv_saddr, 4);
		__builtin_memcpy(&rec.daddr[12], &skc->skc_daddr, 4);
	}
	rec.sport = skc->skc_num;
	rec.dport = bpf_ntohs(skc->skc_dport);
	rec.state = skc->skc_state;
	ENTRY(info)(flow, &rec.info);
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}

/*
 * Replay harness of the equivalence test (userspace/xdcc/src/bpfcc_equivalence.rs):
 * BPF_PROG_TEST_RUN of this syscall program applies one recorded event to
 * the flow state carried in the context and returns the adapter's outputs,
 * so the same event sequence can be fed to this BPF build and to the
 * userspace build of the algorithms. `xdcc cc load` does not load it.
 */
struct xdcc_replay {
	__u32 kind, arg, rcv_nxt, pending;		/* in */
	struct xdcc_sock s;
	struct xdcc_rate_sample rs;
	__u32 ret, pad;					/* out */
	struct xdcc_update u;
	struct xdcc_ce_echo e;
	struct xdcc_cc_info info;
	__u32 pad2;
	__u64 flow[CA_PRIV_SIZE / 8];			/* in and out */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdcc_replay);
} xdcc_replay_buf SEC(".maps");

enum { REPLAY_INIT, REPLAY_ACK, REPLAY_SET_STATE, REPLAY_CWND_EVENT, REPLAY_CE_EVENT,
       REPLAY_SSTHRESH, REPLAY_UNDO };

SEC("syscall")
int XCAT3(replay_, XDCC_CC, )(struct xdcc_replay *ctx)
{
	const void *cfg = xdcc_cfg();
	__u32 key = 0;
	struct xdcc_replay *r = bpf_map_lookup_elem(&xdcc_replay_buf, &key);

	if (!r || !cfg)
		return 1;
	__builtin_memcpy(r, ctx, sizeof(*r));
	r->ret = 0;
	switch (r->kind) {
	case REPLAY_INIT:
		ENTRY(init)(r->flow, cfg, &r->s);
		break;
	case REPLAY_ACK:
		ENTRY(cong_control)(r->flow, cfg, &r->s, &r->rs, &r->u);
		break;
	case REPLAY_SET_STATE:
		r->ret = ENTRY(set_state)(r->flow, cfg, &r->s, r->arg, &r->u);
		break;
	case REPLAY_CWND_EVENT:
		r->ret = ENTRY(cwnd_event)(r->flow, cfg, &r->s, r->arg, &r->u);
		break;
	case REPLAY_CE_EVENT:
		r->ret = ENTRY(ce_event)(r->flow, r->arg, r->rcv_nxt, r->pending, &r->e);
		break;
	case REPLAY_SSTHRESH:
		r->ret = ENTRY(ssthresh)(r->flow, &r->s);
		break;
	case REPLAY_UNDO:
		r->ret = ENTRY(undo_cwnd)(r->flow, cfg, &r->s);
		break;
	default:
		return 2;
	}
	ENTRY(info)(r->flow, &r->info);
	__builtin_memcpy(ctx, r, sizeof(*r));
	return 0;
}

SEC(".struct_ops.link")
struct tcp_congestion_ops xdcc_ops = {
	.init = (void *)xdcc_init,
	.cong_control = (void *)xdcc_cong_control,
	.set_state = (void *)xdcc_set_state,
	.cwnd_event = (void *)xdcc_cwnd_event,
	.ssthresh = (void *)xdcc_ssthresh,
	.undo_cwnd = (void *)xdcc_undo_cwnd,
	.flags = TCP_CONG_NON_RESTRICTED | (XDCC_NEEDS_ECN ? TCP_CONG_NEEDS_ECN : 0),
	.name = "bpf_" XSTR(XDCC_CC),
};
