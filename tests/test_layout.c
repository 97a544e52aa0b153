/* test_layout.c: layout strings, every validation rule with its message,
 * rank numbering, enumeration. The model is filled in code so this suite
 * does not depend on the JSON reader. */
#include <math.h>
#include <string.h>

#include "batch.h"
#include "layout.h"
#include "test_util.h"

/* Llama 2 70B's shape (meta-llama/Llama-2-70b-hf config.json). */
static struct oc_model llama70(void)
{
    struct oc_model m = {0};
    strcpy(m.name, "llama2-70b");
    m.arch = OC_ARCH_LLAMA;
    m.hidden_size = 8192;
    m.num_attention_heads = 64;
    m.num_key_value_heads = 8;
    m.num_hidden_layers = 80;
    m.intermediate_size = 28672;
    m.vocab_size = 32000;
    m.max_position_embeddings = 4096;
    m.gated_mlp = 1;
    m.norm_params_per_h = 1;
    return m;
}

static struct oc_topology eight_per_node(void)
{
    struct oc_topology t = {0};
    t.gpus_per_node = 8;
    t.device.memory_bytes = 80e9;
    return t;
}

static struct oc_layout base(void)
{
    struct oc_layout l;
    oc_layout_default(&l);
    l.global_batch = 512;
    l.seq_length = 4096;
    return l;
}

static void test_parse(void)
{
    struct oc_status st = {{0}};
    struct oc_layout l = base();
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp8-pp4-dp2", &st), 0);
    CU_ASSERT_EQUAL(l.tp, 8);
    CU_ASSERT_EQUAL(l.pp, 4);
    CU_ASSERT_EQUAL(l.dp, 2);
    CU_ASSERT_EQUAL(l.schedule, OC_SCHED_1F1B);
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "dp1-tp2-pp8-mb2-v4-rfull-nosp-gpipe-classic-nozero", &st), 0);
    CU_ASSERT_EQUAL(l.tp, 2);
    CU_ASSERT_EQUAL(l.pp, 8);
    CU_ASSERT_EQUAL(l.micro_batch, 2);
    CU_ASSERT_EQUAL(l.vchunks, 4);
    CU_ASSERT_EQUAL(l.schedule, OC_SCHED_GPIPE); /* named schedule wins over v */
    CU_ASSERT_EQUAL(l.recompute, OC_RECOMPUTE_FULL);
    CU_ASSERT_EQUAL(l.sequence_parallel, 0);
    CU_ASSERT_EQUAL(l.zero, 0);
    CU_ASSERT_EQUAL(l.attention, OC_ATTN_CLASSIC);
    l = base();
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp8-pp8-dp1-v2", &st), 0);
    CU_ASSERT_EQUAL(l.schedule, OC_SCHED_INTERLEAVED); /* v alone implies it */
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp8-pp8-dp1-order=tp-pp-dp-mb4", &st), 0);
    CU_ASSERT_EQUAL(l.order, OC_ORDER_TP_PP_DP);
    CU_ASSERT_EQUAL(l.micro_batch, 4);

    char buf[64];
    l = base();
    oc_layout_parse(&l, "tp4-pp2-dp8-mb2", &st);
    oc_layout_format(&l, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "tp4-pp2-dp8-mb2-1f1b");
    oc_layout_parse(&l, "tp4-pp2-dp8-mb2-v3", &st);
    oc_layout_format(&l, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "tp4-pp2-dp8-mb2-v3");
}

/* The run's precision: bf16 unless a part says otherwise (Megatron-LM's
 * names), 2 bytes per activation element in bf16 and fp16, 4 in fp32. */
static void test_parse_precision(void)
{
    struct oc_status st = {{0}};
    struct oc_layout l = base();
    CU_ASSERT_EQUAL(l.precision, OC_PREC_BF16);
    CU_ASSERT_EQUAL(oc_layout_act_bytes(&l), 2.0);
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp2-pp1-dp1-fp32", &st), 0);
    CU_ASSERT_EQUAL(l.precision, OC_PREC_FP32);
    CU_ASSERT_EQUAL(oc_layout_act_bytes(&l), 4.0);
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "fp16-tp2-pp1-dp1", &st), 0);
    CU_ASSERT_EQUAL(l.precision, OC_PREC_FP16);
    CU_ASSERT_EQUAL(oc_layout_act_bytes(&l), 2.0);
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp2-pp1-dp1-bf16", &st), 0);
    CU_ASSERT_EQUAL(l.precision, OC_PREC_BF16);
    const enum oc_precision all[3] = {OC_PREC_BF16, OC_PREC_FP16, OC_PREC_FP32};
    const char *names[3] = {"bf16", "fp16", "fp32"};
    for (int i = 0; i < 3; i++) {
        enum oc_precision p = OC_PREC_BF16;
        CU_ASSERT_STRING_EQUAL(oc_precision_name(all[i]), names[i]);
        CU_ASSERT_EQUAL(oc_precision_from_name(names[i], &p), 0);
        CU_ASSERT_EQUAL(p, all[i]);
    }
    enum oc_precision p = OC_PREC_FP16;
    CU_ASSERT_EQUAL(oc_precision_from_name("fp8", &p), -1);
    CU_ASSERT_EQUAL(p, OC_PREC_FP16);
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp2-pp1-dp1-fp64", &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "bf16|fp16|fp32"));
}

static void test_parse_errors(void)
{
    struct oc_status st = {{0}};
    struct oc_layout l = base();
    struct oc_layout before = l;
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp8-pp4", &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "must name tp, pp and dp"));
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp8-pp4-dp2-zz", &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "part 'zz' not understood"));
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp0-pp4-dp2", &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "part 'tp0'"));
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp-1-pp4-dp2", &st), -1);
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp99999999999-pp1-dp1", &st), -1);
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "", &st), -1);
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp8-pp8-dp1-order=pp-tp-dp", &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "unknown rank order"));
    /* a failed parse leaves the layout untouched */
    CU_ASSERT_EQUAL(memcmp(&l, &before, sizeof l), 0);
}

/* Defect 8 of issue 11: a knob named twice in one string ("tp8-tp8-...",
 * two schedules, two recompute modes, two rank orders) was taken silently,
 * the last one winning; now the message names both parts. */
static void test_parse_repeated(void)
{
    struct oc_status st = {{0}};
    struct oc_layout l = base();
    struct oc_layout before = l;
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp8-tp8-pp8-dp1", &st), -1);
    CU_ASSERT_STRING_EQUAL(st.msg, "layout 'tp8-tp8-pp8-dp1': 'tp8' and 'tp8' both give "
                                   "tp (write it once)");
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp2-pp2-dp2-gpipe-interleaved-1f1b", &st), -1);
    CU_ASSERT_STRING_EQUAL(st.msg, "layout 'tp2-pp2-dp2-gpipe-interleaved-1f1b': 'gpipe' "
                                   "and 'interleaved' both give the schedule (write it once)");
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp2-pp2-dp2-rfull-rnone", &st), -1);
    oc_test_msg_has(st.msg, "'rfull' and 'rnone' both give recompute");
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp2-pp2-dp2-mb1-mb2", &st), -1);
    oc_test_msg_has(st.msg, "'mb1' and 'mb2' both give the micro-batch size");
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "v2-tp2-pp2-dp2-v4", &st), -1);
    oc_test_msg_has(st.msg, "'v2' and 'v4' both give v (model chunks per stage)");
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp2-pp2-dp2-sp-nosp", &st), -1);
    oc_test_msg_has(st.msg, "'sp' and 'nosp' both give sequence parallelism");
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp2-pp2-dp2-zero1-nozero", &st), -1);
    oc_test_msg_has(st.msg, "'zero1' and 'nozero' both give the optimizer sharding");
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp2-pp2-dp2-flash-classic", &st), -1);
    oc_test_msg_has(st.msg, "'flash' and 'classic' both give the attention kernel");
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp2-pp2-dp2-bf16-fp32", &st), -1);
    oc_test_msg_has(st.msg, "'bf16' and 'fp32' both give the precision");
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "order=tp-pp-dp-tp2-pp2-dp2-order=tp-dp-pp", &st), -1);
    oc_test_msg_has(st.msg, "'order=tp-pp-dp' and 'order=tp-dp-pp' both give the rank order");
    CU_ASSERT_EQUAL(memcmp(&l, &before, sizeof l), 0);
    /* what a string names: "v2" alone names the schedule too */
    unsigned named = 0;
    CU_ASSERT_EQUAL(oc_layout_parse_named(&l, "tp2-pp2-dp2-v2-rfull", &named, &st), 0);
    CU_ASSERT_EQUAL(named, OC_LAYOUT_NAMED_TP | OC_LAYOUT_NAMED_PP | OC_LAYOUT_NAMED_DP |
                               OC_LAYOUT_NAMED_V | OC_LAYOUT_NAMED_SCHEDULE |
                               OC_LAYOUT_NAMED_RECOMPUTE);
    CU_ASSERT_EQUAL(l.schedule, OC_SCHED_INTERLEAVED);
}

/* Defect 6 of issue 11: tp*pp*dp of three sizes of 1e9 overflowed int64
 * (UBSan; a negative world in Release); now the parse and the validation
 * refuse a product above 1e9 cards without multiplying it out. */
static void test_world_bound(void)
{
    struct oc_status st = {{0}};
    struct oc_layout l = base();
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp1000000000-pp1000000000-dp1000000000", &st), -1);
    CU_ASSERT_STRING_EQUAL(st.msg, "layout 'tp1000000000-pp1000000000-dp1000000000': "
                                   "TP*PP*DP = 1000000000*1000000000*1000000000 is more "
                                   "than 1000000000 cards");
    /* 1e9 exactly is the bound, one more card is past it */
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp1000-pp1000-dp1000", &st), 0);
    CU_ASSERT_EQUAL(oc_layout_world(&l), 1000000000);
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp1000-pp1000-dp1001", &st), -1);
    oc_test_msg_has(st.msg, "is more than 1000000000 cards");
    struct oc_layout big = base();
    big.tp = big.pp = big.dp = 1000000000;
    struct oc_model m = llama70();
    CU_ASSERT_EQUAL(oc_layout_validate(&big, &m, NULL, 8, &st), -1);
    oc_test_msg_has(st.msg, "TP*PP*DP = 1000000000*1000000000*1000000000 is more than");
    big.tp = 0;
    CU_ASSERT_EQUAL(oc_layout_check_world(&big, &st), -1);
    oc_test_msg_has(st.msg, "tp, pp and dp must be at least 1");
    /* b*s, the rows of every GEMM, at most 1e9 tokens: 244141 x 4096 =
     * 1 000 001 536 is refused; 244140 x 4096 = 999 997 440 passes this
     * rule (and fails a later one: 512 sequences do not divide by it) */
    struct oc_layout tok = base();
    tok.tp = 8, tok.pp = 8, tok.dp = 1;
    tok.micro_batch = 244141;
    CU_ASSERT_EQUAL(oc_layout_validate(&tok, &m, NULL, 64, &st), -1);
    CU_ASSERT_STRING_EQUAL(st.msg, "a micro-batch of 244141 sequences of 4096 tokens is more "
                                   "than 1000000000 tokens");
    tok.micro_batch = 244140;
    CU_ASSERT_EQUAL(oc_layout_validate(&tok, &m, NULL, 64, &st), -1);
    oc_test_msg_has(st.msg, "global batch 512 is not divisible");
}

/* Defect 7 of issue 11: the string and its parts are echoed escaped and
 * shortened (a newline broke the one-line message; terminal escapes and
 * bytes that are not UTF-8 passed). */
static void test_parse_escaped(void)
{
    struct oc_status st = {{0}};
    struct oc_layout l = base();
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp2-pp2-dp2-\x1b[2J\nx", &st), -1);
    oc_test_msg_has(st.msg, "layout 'tp2-pp2-dp2-\\x1b[2J\\nx': part '\\x1b[2J\\nx' not understood");
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp2-pp2-dp2-\xc3", &st), -1);
    oc_test_msg_has(st.msg, "part '\\xc3' not understood");
    /* 250 bytes: both quotes shortened, the reason kept */
    char s[251];
    memset(s, 'x', 250);
    s[250] = '\0';
    CU_ASSERT_EQUAL(oc_layout_parse(&l, s, &st), -1);
    char q[OC_QUOTE_MAX], want[2 * OC_QUOTE_MAX + 64];
    oc_quote(q, sizeof q, s);
    CU_ASSERT_EQUAL(strlen(q), OC_QUOTE_MAX - 1);
    snprintf(want, sizeof want, "layout '%s': part '%s' not understood", q, q);
    oc_test_msg_has(st.msg, want);
    oc_test_msg_has(st.msg, "order=tp-dp-pp|tp-pp-dp)");
    CU_ASSERT(strlen(st.msg) < OC_MSG_MAX - 1);
}

/* Validate l on `cards`; expect failure with `needle` in the message. */
static void expect_rule(struct oc_layout l, int64_t cards, const char *needle)
{
    struct oc_model m = llama70();
    struct oc_topology t = eight_per_node();
    struct oc_status st = {{0}};
    int rc = oc_layout_validate(&l, &m, &t, cards, &st);
    CU_ASSERT_EQUAL(rc, -1);
    oc_test_msg_has(st.msg, needle);
    CU_ASSERT_PTR_NULL(strchr(st.msg, '\n'));
}

static void test_validate_rules(void)
{
    struct oc_model m = llama70();
    struct oc_topology t = eight_per_node();
    struct oc_status st = {{0}};
    struct oc_layout l = base();
    l.tp = 8, l.pp = 8, l.dp = 1;
    CU_ASSERT_EQUAL(oc_layout_validate(&l, &m, &t, 64, &st), 0);

    l.tp = 4, l.pp = 4, l.dp = 2;
    expect_rule(l, 64, "TP*PP*DP = 4*4*2 = 32 does not match 64 cards");
    expect_rule(l, 64, "total world size does not match device count");

    l = base(), l.tp = 3, l.pp = 1, l.dp = 1, l.allow_cross_node_tp = 1;
    expect_rule(l, 3, "num_attention_heads 64 is not divisible by TP 3");
    l = base(), l.tp = 16, l.pp = 1, l.dp = 1, l.allow_cross_node_tp = 1;
    expect_rule(l, 16, "num_key_value_heads 8 is not divisible by TP 16");
    l = base(), l.tp = 8, l.pp = 3, l.dp = 1;
    expect_rule(l, 24, "num_hidden_layers 80 is not divisible by PP 3");
    l = base(), l.tp = 8, l.pp = 4, l.dp = 1, l.schedule = OC_SCHED_INTERLEAVED, l.vchunks = 3;
    expect_rule(l, 32, "num_hidden_layers 80 is not divisible by PP*v = 4*3 = 12");
    l = base(), l.tp = 8, l.pp = 1, l.dp = 3;
    expect_rule(l, 24, "global batch 512 is not divisible by DP*micro-batch = 3*1 = 3");
    l = base(), l.tp = 8, l.pp = 1, l.dp = 2, l.micro_batch = 512;
    expect_rule(l, 16, "global batch 512 is not divisible by DP*micro-batch = 2*512 = 1024");
    /* With 16 KV heads TP 16 passes the head rules and meets the node rule. */
    struct oc_model mha = llama70();
    mha.num_key_value_heads = 64;
    l = base(), l.tp = 16, l.pp = 1, l.dp = 1;
    CU_ASSERT_EQUAL(oc_layout_validate(&l, &mha, &t, 16, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "TP 16 spans nodes of 8 GPUs"));
    l.allow_cross_node_tp = 1;
    CU_ASSERT_EQUAL(oc_layout_validate(&l, &mha, &t, 16, &st), 0);
    /* 4 does divide 8; a TP of 8 on nodes of 6 does not. */
    struct oc_topology six = eight_per_node();
    six.gpus_per_node = 6;
    l = base(), l.tp = 4, l.pp = 1, l.dp = 1;
    CU_ASSERT_EQUAL(oc_layout_validate(&l, &m, &six, 4, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "does not divide the 6 GPUs of a node"));
    l.allow_cross_node_tp = 1;
    CU_ASSERT_EQUAL(oc_layout_validate(&l, &m, &six, 4, &st), 0);

    l = base(), l.tp = 8, l.pp = 1, l.dp = 8, l.schedule = OC_SCHED_INTERLEAVED, l.vchunks = 2;
    expect_rule(l, 64, "interleaved schedule needs PP >= 2");
    l = base(), l.tp = 8, l.pp = 8, l.dp = 1, l.schedule = OC_SCHED_INTERLEAVED, l.vchunks = 1;
    expect_rule(l, 64, "needs v >= 2");
    l = base(), l.tp = 8, l.pp = 8, l.dp = 1, l.vchunks = 2;
    expect_rule(l, 64, "v2 model chunks per stage need the interleaved schedule");
    /* m = 512/(1*4) = 128 is a multiple of 8; with global batch 20, m = 20
     * is not a multiple of PP 8 (Megatron's rule). */
    l = base(), l.tp = 8, l.pp = 8, l.dp = 1, l.schedule = OC_SCHED_INTERLEAVED, l.vchunks = 2;
    l.global_batch = 20;
    expect_rule(l, 64, "20 micro-batches to be a multiple of PP 8");
    l.global_batch = 512, l.micro_batch = 4;
    CU_ASSERT_EQUAL(oc_layout_validate(&l, &m, &t, 64, &st), 0);
    /* Beyond max_position_embeddings: allowed for rotary positions (issue
     * 12, long-context training) with a warning, refused for a learned
     * position table. */
    l = base(), l.tp = 8, l.pp = 8, l.dp = 1, l.seq_length = 8192;
    CU_ASSERT_EQUAL(oc_layout_validate(&l, &m, &t, 64, &st), 0);
    char warn[OC_MSG_MAX];
    CU_ASSERT_EQUAL(oc_layout_seq_warning(&l, &m, warn, sizeof warn), 1);
    CU_ASSERT_STRING_EQUAL(warn, "sequence length 8192 exceeds the model's "
                                 "max_position_embeddings 4096 (no rope_scaling in the "
                                 "config); costs and memory are predicted as for any length");
    {
        struct oc_model g = m;
        g.learned_pos_emb = 1;
        CU_ASSERT_EQUAL(oc_layout_validate(&l, &g, &t, 64, &st), -1);
        CU_ASSERT_STRING_EQUAL(st.msg, "sequence length 8192 exceeds the model's "
                                       "max_position_embeddings 4096 (a learned position table)");
        CU_ASSERT_EQUAL(oc_layout_seq_warning(&l, &g, warn, sizeof warn), 0);
    }
    l = base(), l.tp = 8, l.pp = 8, l.dp = 1, l.seq_length = 4092;
    expect_rule(l, 64, "sequence parallel needs the sequence length 4092 divisible by TP 8");
    l.sequence_parallel = 0;
    CU_ASSERT_EQUAL(oc_layout_validate(&l, &m, &t, 64, &st), 0);
    l = base(), l.tp = 0;
    expect_rule(l, 64, "must be at least 1");
}

static void test_rank_order(void)
{
    struct oc_layout l = base();
    l.tp = 8, l.pp = 4, l.dp = 2;
    /* Megatron default: rank = tp + 8*(dp + 2*pp); rank 21 = 5 + 8*(0 + 2*1). */
    struct oc_coord c = oc_layout_coord(&l, 21);
    CU_ASSERT_EQUAL(c.tp, 5);
    CU_ASSERT_EQUAL(c.dp, 0);
    CU_ASSERT_EQUAL(c.pp, 1);
    l.order = OC_ORDER_TP_PP_DP;
    /* rank = tp + 8*(pp + 4*dp); rank 21 = 5 + 8*2 -> pp 2, dp 0. */
    c = oc_layout_coord(&l, 21);
    CU_ASSERT_EQUAL(c.tp, 5);
    CU_ASSERT_EQUAL(c.pp, 2);
    CU_ASSERT_EQUAL(c.dp, 0);
    for (int o = 0; o < 2; o++) {
        l.order = (enum oc_rank_order)o;
        int seen[64] = {0};
        for (int64_t r = 0; r < 64; r++) {
            struct oc_coord k = oc_layout_coord(&l, r);
            CU_ASSERT_EQUAL(oc_layout_rank(&l, k), r);
            seen[k.tp + 8 * (k.pp + 4 * k.dp)]++;
        }
        for (int i = 0; i < 64; i++)
            CU_ASSERT_EQUAL(seen[i], 1);
    }
}

static void test_enumerate(void)
{
    struct oc_model m = llama70();
    struct oc_topology t = eight_per_node();
    int64_t mbs[] = {1, 2};
    enum oc_schedule_kind sch[] = {OC_SCHED_1F1B, OC_SCHED_INTERLEAVED};
    int64_t vs[] = {1, 2};
    struct oc_enum_opts o = {.cards = 64, .base = base(), .micro_batches = mbs,
                             .n_micro_batches = 2, .schedules = sch,
                             .vchunks = vs, .n_schedules = 2, .even_stages = 1};
    struct oc_candidate *c = NULL;
    int64_t n = oc_layout_enumerate(&o, &m, &t, &c);
    /* 64 = 2^6: ordered (tp, pp, dp) with product 64 = C(6+2, 2) = 28;
     * times 2 micro-batch sizes times 2 schedules. */
    CU_ASSERT_EQUAL(n, 28 * 4);
    int64_t valid = 0;
    for (int64_t i = 0; i < n; i++) {
        const struct oc_layout *l = &c[i].layout;
        CU_ASSERT_EQUAL(l->tp * l->pp * l->dp, 64);
        CU_ASSERT_EQUAL(c[i].valid, c[i].reason[0] == '\0');
        valid += c[i].valid;
        /* TP > 8 always breaks a rule (KV heads 8, or a node of 8). */
        if (l->tp > 8)
            CU_ASSERT_FALSE(c[i].valid);
    }
    /* Valid (tp, pp): tp in {1,2,4,8}; pp divides 80 and 64/tp: pp in
     * {1,2,4,8,16} with pp <= 64/tp; layers % pp: 80 % 16 == 0 ok.
     * tp1: pp 1,2,4,8,16 (5); tp2: 1,2,4,8,16 (5); tp4: 1,2,4,8,16 (5);
     * tp8: 1,2,4,8 (4) -> 19 (tp, pp) pairs; every dp divides 512 with b in
     * {1,2}. 1f1b: 19 * 2. interleaved v2 needs pp >= 2 and 80 % (2pp) == 0
     * (pp 16 -> 32 does not divide 80): tp1..tp4 pp 2,4,8 (9), tp8 pp 2,4,8
     * (3) -> 12 pairs, m % pp: m = 512/(dp*b) with dp = 64/(tp*pp) is a
     * multiple of pp in every case here -> 12 * 2. Total 38 + 24 = 62. */
    CU_ASSERT_EQUAL(valid, 62);
    free(c);
}

/* Every knob round-trips through the label: two layouts that differ in any
 * knob print differently, and the label parses back to the same layout. */
static void test_format_every_knob(void)
{
    struct oc_status st = {{0}};
    struct oc_layout d, l;
    oc_layout_default(&d);
    char s[256];
    oc_layout_format(&d, s, sizeof s);
    CU_ASSERT_STRING_EQUAL(s, "tp1-pp1-dp1-mb1-1f1b");
    l = d;
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp2-cp4-pp3-dp5-mb2-1f1b-first10-last12-nosp-"
                                       "rfull3-zero3-noovl-classic-order=tp-pp-dp-coll=hier",
                                    &st), 0);
    CU_ASSERT_EQUAL(l.cp, 4);
    CU_ASSERT_EQUAL(l.first_stage_layers, 10);
    CU_ASSERT_EQUAL(l.last_stage_layers, 12);
    CU_ASSERT_EQUAL(l.recompute, OC_RECOMPUTE_FULL);
    CU_ASSERT_EQUAL(l.recompute_layers, 3);
    CU_ASSERT_EQUAL(l.zero, 3);
    CU_ASSERT_EQUAL(l.overlap_grad_reduce, 0);
    CU_ASSERT_EQUAL(l.coll, OC_COLL_CHOICE_HIER);
    CU_ASSERT_EQUAL(oc_layout_world(&l), 2 * 4 * 3 * 5);
    oc_layout_format(&l, s, sizeof s);
    CU_ASSERT_STRING_EQUAL(s, "tp2-pp3-dp5-cp4-mb2-1f1b-first10-last12-nosp-rfull3-zero3-"
                              "noovl-classic-order=tp-pp-dp-coll=hier");
    struct oc_layout back = d;
    CU_ASSERT_EQUAL(oc_layout_parse(&back, s, &st), 0);
    CU_ASSERT_EQUAL(memcmp(&back, &l, sizeof l), 0);
    /* each knob alone changes the label */
    const char *one[] = {"rnone", "rfull", "zero0", "zero2", "noovl", "cp2", "first3",
                         "coll=ring", "coll=tree", "nosp", "order=tp-pp-dp", "classic"};
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
        char in[64], out[256];
        snprintf(in, sizeof in, "tp1-pp1-dp1-%s", one[i]);
        struct oc_layout x = d;
        CU_ASSERT_EQUAL_FATAL(oc_layout_parse(&x, in, &st), 0);
        oc_layout_format(&x, out, sizeof out);
        CU_ASSERT_STRING_NOT_EQUAL(out, "tp1-pp1-dp1-mb1-1f1b");
        struct oc_layout y = d;
        CU_ASSERT_EQUAL(oc_layout_parse(&y, out, &st), 0);
        CU_ASSERT_EQUAL(memcmp(&x, &y, sizeof x), 0);
    }
    /* cp sits between tp and dp in the rank numbering (Megatron-LM's
     * tp-cp-ep-dp-pp): tp2-cp2-pp2-dp2, rank 2 is tp 0, cp 1 */
    l = d;
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp2-cp2-pp2-dp2", &st), 0);
    struct oc_coord c = oc_layout_coord(&l, 2);
    CU_ASSERT(c.tp == 0 && c.cp == 1 && c.dp == 0 && c.pp == 0);
    c = oc_layout_coord(&l, 4);
    CU_ASSERT(c.tp == 0 && c.cp == 0 && c.dp == 1 && c.pp == 0);
    for (int64_t r = 0; r < 16; r++)
        CU_ASSERT_EQUAL(oc_layout_rank(&l, oc_layout_coord(&l, r)), r);
    CU_ASSERT_NOT_EQUAL(oc_layout_parse(&l, "tp1-pp1-dp1-zero4", &st), 0);
    CU_ASSERT_NOT_EQUAL(oc_layout_parse(&l, "tp1-pp1-dp1-coll=star", &st), 0);
    CU_ASSERT_NOT_EQUAL(oc_layout_parse(&l, "tp1-pp1-dp1-rfull0", &st), 0);
}

/* oc_batch_nearest, worked by hand. */
static void test_batch_nearest(void)
{
    struct oc_layout l;
    oc_layout_default(&l);
    l.dp = 6, l.micro_batch = 1, l.pp = 1;
    /* 512 / 6 = 85.3: 510 (2 away) beats 516 (4 away) */
    CU_ASSERT_EQUAL(oc_batch_nearest(&l, 512, 0.05), 510);
    CU_ASSERT_EQUAL(oc_batch_nearest(&l, 512, 0.001), 0);
    l.dp = 12, l.micro_batch = 1;
    /* 504 (8 away) and 516 (4 away): 516 */
    CU_ASSERT_EQUAL(oc_batch_nearest(&l, 512, 0.05), 516);
    l.dp = 8;
    CU_ASSERT_EQUAL(oc_batch_nearest(&l, 512, 0), 512);
    /* interleaved on pp 3: steps of dp*mb*pp = 4*1*3 = 12: 504 or 516, a tie
     * at 8 ... no: 512-504 = 8, 516-512 = 4 -> 516 */
    l.dp = 4, l.pp = 3, l.schedule = OC_SCHED_INTERLEAVED, l.vchunks = 2;
    CU_ASSERT_EQUAL(oc_batch_nearest(&l, 512, 0.05), 516);
    /* a tie goes to the larger: target 6, step 4 -> 4 and 8 */
    l.dp = 4, l.pp = 1, l.schedule = OC_SCHED_1F1B, l.vchunks = 1;
    CU_ASSERT_EQUAL(oc_batch_nearest(&l, 6, 0.5), 8);
    /* nothing below one step */
    CU_ASSERT_EQUAL(oc_batch_nearest(&l, 2, 0.4), 0);
}

/* oc_layout_cmp_except: equal but for the excepted knobs compares 0 (the
 * recompute bit covers the mode and its k), any other field orders. */
static void test_cmp_except(void)
{
    struct oc_layout a, b;
    oc_layout_default(&a);
    b = a;
    b.coll = OC_COLL_CHOICE_TREE;
    CU_ASSERT_EQUAL(oc_layout_cmp_except(&a, &b, OC_LAYOUT_NAMED_COLL), 0);
    CU_ASSERT_TRUE(oc_layout_cmp_except(&a, &b, 0) < 0);
    CU_ASSERT_TRUE(oc_layout_cmp_except(&b, &a, OC_LAYOUT_NAMED_RECOMPUTE) > 0);
    b = a;
    b.recompute = OC_RECOMPUTE_FULL;
    b.recompute_layers = 3;
    CU_ASSERT_EQUAL(oc_layout_cmp_except(&a, &b, OC_LAYOUT_NAMED_RECOMPUTE), 0);
    CU_ASSERT_NOT_EQUAL(oc_layout_cmp_except(&a, &b, OC_LAYOUT_NAMED_COLL), 0);
    b.recompute = a.recompute;
    CU_ASSERT_NOT_EQUAL(oc_layout_cmp_except(&a, &b, OC_LAYOUT_NAMED_COLL), 0);
    b = a;
    b.global_batch = a.global_batch + 1; /* no bit: always compared */
    CU_ASSERT_TRUE(oc_layout_cmp_except(&a, &b, ~0u) < 0);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"parse", test_parse},
        {"cmp_except", test_cmp_except},
        {"parse_errors", test_parse_errors},
        {"parse_repeated (defect 8)", test_parse_repeated},
        {"world_bound (defect 6)", test_world_bound},
        {"parse_escaped (defect 7)", test_parse_escaped},
        {"parse_precision", test_parse_precision},
        {"validate_rules", test_validate_rules},
        {"rank_order", test_rank_order},
        {"enumerate", test_enumerate},
        {"format_every_knob", test_format_every_knob},
        {"batch_nearest", test_batch_nearest},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"layout", NULL, NULL, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return oc_test_run(suites);
}
