/* options_help.c: the help texts of the flags of options.c's table (see
 * options.h), next to each other so that a new flag's help is not
 * forgotten in one program. */
#include "options.h"

void oc_opts_print_help(FILE *f, unsigned groups)
{
    fputs("Common options:\n"
          "  --cards N               number of GPUs (required)\n"
          "  --model M               shipped name or path to a Hugging Face config.json\n"
          "                          (default llama2-70b)\n"
          "  --topology T            shipped name or path to a topology .json\n"
          "                          (default h100-100g: 8 x H100 + NVLink, 100 Gb/s per node)\n"
          "  --global-batch B        sequences per step (--global-batch-size; default 512)\n"
          "  --seq S                 sequence length (--seq-length; default the model's\n"
          "                          max_position_embeddings)\n"
          "  --recompute MODE        none | selective | full (--recompute-granularity;\n"
          "                          default selective)\n"
          "  --[no-]sequence-parallel  (default on)\n"
          "  --[no-]shard-optimizer  ZeRO-1 / --use-distributed-optimizer (default on)\n"
          "  --[no-]overlap-grad-reduce  DP reduction in buckets under the backward\n"
          "                          (default on)\n"
          "  --attention KERNEL      flash | classic (default flash)\n"
          "  --rank-order ORDER      tp-dp-pp (Megatron's default: TP fastest, PP\n"
          "                          outermost) | tp-pp-dp (PP across neighbouring\n"
          "                          nodes, DP outermost)\n"
          "  --allow-cross-node-tp   let a TP group span nodes\n"
          "  --bf16 | --fp16 | --fp32  the run's precision (Megatron-LM's flags): 2 or\n"
          "                          4 bytes per activation and gradient element in\n"
          "                          messages, collectives and memory (default bf16;\n"
          "                          ocsim-exec runs fp32 on both backends)\n", f);
    if (groups & OC_OPT_LAYOUT)
        fputs("Layout (one of):\n"
              "  --layout STR            tp<N>-pp<N>-dp<N>[-mb<N>][-v<N>][-gpipe|-1f1b|\n"
              "                          -interleaved][-sp|-nosp][-rnone|-rsel|-rfull]\n"
              "                          [-zero1|-nozero][-flash|-classic]\n"
              "                          [-bf16|-fp16|-fp32]\n"
              "                          [-order=tp-dp-pp|-order=tp-pp-dp]\n"
              "  --tp N --pp N --dp N    (--tensor-model-parallel-size,\n"
              "                          --pipeline-model-parallel-size)\n"
              "  --micro-batch N         sequences per micro-batch (--micro-batch-size;\n"
              "                          default 1)\n"
              "  --schedule S            gpipe | 1f1b | interleaved (default 1f1b)\n"
              "  --vchunks V             model chunks per stage, interleaved\n"
              "                          (--num-virtual-stages-per-pipeline-rank)\n", f);
    if (groups & OC_OPT_SWEEP)
        fputs("Candidates:\n"
              "  --micro-batches LIST    micro-batch sizes to try (default 1,2,4)\n"
              "  --schedule LIST         schedules to try: gpipe, 1f1b, interleaved[:v],\n"
              "                          all (default 1f1b,interleaved:2)\n"
              "  --resume                continue the sweep in --out (interrupted, or\n"
              "                          to redo its report): the same flags, only the\n"
              "                          layouts its sweep.journal lacks are simulated\n"
              "  --batch-tolerance P     let each layout run the global batch nearest\n"
              "                          --global-batch within P% (e.g. 5%; default 0:\n"
              "                          exactly it); the row reports the batch it ran\n"
              "  --even-stages           only even pipeline splits (default: also the\n"
              "                          uneven first<N>/last<N> splits of the layers)\n", f);
    if (groups & OC_OPT_SIM)
        fputs("Simulation:\n"
              "  --fidelity MODE         fast: one rank per TP group, TP collectives in\n"
              "                          closed form, one op per model chunk (default);\n"
              "                          full: every rank, layer and message\n"
              "  --collective ALGO       auto (per collective and size, as NCCL) | ring |\n"
              "                          tree | hier, for every collective (ZeRO's\n"
              "                          reduce-scatter and all-gather too) where it\n"
              "                          applies, else ring\n"
              "  --coarse                merge the steps of each ring into one message\n"
              "  --platform FILE         a SimGrid platform XML with hosts gpu0..gpuN-1\n"
              "                          instead of the one generated from --topology\n"
              "  --cfg KEY:VALUE         passed to SimGrid (repeatable), e.g.\n"
              "                          --cfg network/model:LV08\n"
              "  --log SPEC              SimGrid log settings, e.g. --log\n"
              "                          ocsim_replay.thres:debug (one line per op)\n"
              "  --jobs N                simulations at once (default: the cores)\n"
              "  --top N                 rows of the ranked table (default 10)\n", f);
    if (groups & OC_OPT_RESERVE)
        fputs("Memory reserve (what fits means: peak + reserve <= device memory):\n"
              "  --reserve auto|BYTES    auto (default): CUDA context, NCCL buffers per\n"
              "                          communicator, cuBLAS workspaces, fragmentation\n"
              "                          (docs/guide.md); BYTES: the whole reserve, e.g.\n"
              "                          6GB or 5.5GiB; 0: the tensors alone\n"
              "  --fragmentation F       auto's allocator fragmentation, a fraction of\n"
              "                          the peak (default 0.10, an assumption)\n", f);
    if (groups & OC_OPT_PLAN)
        fputs("Planning:\n"
              "  --cards LIST|RANGE      one sweep per card count into DIR/cards-N and a\n"
              "                          scaling table: 32,48,64, or 32-128 (doubling:\n"
              "                          32,64,128), or 32-128:32 (32,64,96,128)\n"
              "  --robustness R          perturbed cost models for the confidence of the\n"
              "                          choice (default 200; 0: off)\n"
              "  --seed S                their random seed (default 1234)\n", f);
    if (groups & OC_OPT_CSV)
        fputs("  --csv FILE              also write the table as CSV\n", f);
    if (groups & OC_OPT_OUT)
        fputs("  --out DIR               output folder\n", f);
}

void oc_opts_print_exec_help(FILE *f)
{
    fputs("Executor options:\n"
          "  --backend cpu|cuda      cpu: fp32 on OpenBLAS + MPI (default); cuda: cuBLAS,\n"
          "                          own kernels and NCCL, one GPU per rank\n"
          "  --precision bf16|fp32   cuda GEMM operands (default bf16: bf16 operands,\n"
          "                          fp32 accumulation, fp32 master weights); the\n"
          "                          activations and gradients stay fp32, so the run\n"
          "                          is an fp32 run for ocsim (--fp32)\n"
          "  --steps K               training steps (default 5, at most 10000000)\n"
          "  --lr X                  AdamW learning rate (default 1e-3; beta2 0.95,\n"
          "                          weight decay 0.1)\n"
          "  --seed S                weights and data (default 1234)\n"
          "  --timeout auto|SECONDS  a rank that waits longer for one message or\n"
          "                          collective ends the job (exit code 3); auto (the\n"
          "                          default): 10 x the predicted step (or checkpoint\n"
          "                          shard's write), at least 60 s, at most a week;\n"
          "                          the run prints the value and why\n"
          "  --no-weights            do not gather and write weights.bin\n"
          "  --no-mpi                one process without MPI even in an MPI build: the\n"
          "                          ranks are its threads (cuda; cpu: one rank only)\n"
          "  --calibrate             measure this machine (GEMM rate and the rate of\n"
          "                          each model part, forward and backward, at the\n"
          "                          layout's shapes; memory bandwidth; MPI or NCCL\n"
          "                          point-to-point and all-reduce as nccl-tests' busbw)\n"
          "                          and write DIR/topology-calibrated.json\n"
          "                          (--topology with the measured fields); no training\n"
          "  --netbw                 measure the network between nodes (run one rank per\n"
          "                          node, or one per NIC): ping-pong latency, streaming\n"
          "                          bandwidth, all-reduce busbw across nodes by size\n"
          "                          (nccl-tests' tables), and write\n"
          "                          DIR/topology-netbw.json (--topology with the NIC\n"
          "                          bandwidth and latency measured); no training\n"
          "  --ranks-per-node K      --netbw: each K consecutive ranks form a node (tests\n"
          "                          on one machine; default: ranks sharing a host name)\n"
          "  --max-msg BYTES         --netbw: the largest message (default 64M; K, M, G)\n"
          "  --save DIR              checkpoint after the last step into DIR/step-NNNNNN/\n"
          "                          (one shard per rank and a manifest with SHA-256s;\n"
          "                          DIR/latest names the newest complete one)\n"
          "  --save-every N          also after every N-th step\n"
          "  --save-keep K           keep the newest K checkpoints in DIR (default all)\n"
          "  --load DIR              resume from a checkpoint (its folder, or DIR with\n"
          "                          latest): every shard verified first; another layout\n"
          "                          is resharded; --steps more steps are run\n",
          f);
}
