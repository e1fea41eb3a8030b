/*
 * epic_mpi_bench: the MPI baseline of the EPIC lab.
 *
 * Runs MPI collectives over FP32 vectors with MPI_SUM, times every call
 * (an iteration runs from the first rank's start to the last rank's
 * completion, on the machine's one CLOCK_MONOTONIC), checks every output
 * against the exact expected values, and prints one JSON line per
 * (collective, size) on rank 0. Sizes follow the lab's convention (see
 * crates/epic-lab/src/config.rs, `LabConfig::points`): `bytes` is one
 * rank's vector; ReduceScatter takes the whole vector and leaves block r
 * on rank r, AllGather gathers the whole vector from blocks of bytes/N.
 * See README.md.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum coll { ALLREDUCE, REDUCE, BROADCAST, BARRIER, REDUCESCATTER, ALLGATHER, NCOLL };

static const char *const coll_names[NCOLL] = {
    "allreduce", "reduce", "broadcast", "barrier", "reducescatter", "allgather",
};

#define MAX_LIST 64

/* CLOCK_MONOTONIC in seconds: one clock for every rank of the machine. */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct options {
    int colls[MAX_LIST];
    int ncolls;
    long long sizes[MAX_LIST];
    int nsizes;
    int iters;
    int warmup;
    int root;
};

/* Rank r's input element i: a small integer, so every sum is exact. */
static float value(int r, long i) { return (float)((r + 1) * ((i % 97) + 1)); }

/* Element i of the reduction over `nranks` ranks. */
static float reduced(int nranks, long i) {
    return (float)((long)nranks * (nranks + 1) / 2 * ((i % 97) + 1));
}

static int parse_collectives(const char *arg, struct options *o) {
    char buf[512];
    if (strlen(arg) >= sizeof buf) return -1;
    strcpy(buf, arg);
    o->ncolls = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int found = -1;
        for (int c = 0; c < NCOLL; c++) {
            if (strcmp(tok, coll_names[c]) == 0) found = c;
        }
        if (found < 0 || o->ncolls >= MAX_LIST) return -1;
        o->colls[o->ncolls++] = found;
    }
    return o->ncolls > 0 ? 0 : -1;
}

/* A byte count with an optional K, M or G suffix (powers of 1024). */
static int parse_bytes(const char *s, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0) return -1;
    long long mult = 1;
    if (*end == 'K' || *end == 'k') mult = 1LL << 10, end++;
    else if (*end == 'M' || *end == 'm') mult = 1LL << 20, end++;
    else if (*end == 'G' || *end == 'g') mult = 1LL << 30, end++;
    if (*end != '\0' || v > (4LL * INT_MAX) / mult) return -1;
    *out = v * mult;
    return 0;
}

static int parse_sizes(const char *arg, struct options *o) {
    char buf[1024];
    if (strlen(arg) >= sizeof buf) return -1;
    strcpy(buf, arg);
    o->nsizes = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (o->nsizes >= MAX_LIST || parse_bytes(tok, &o->sizes[o->nsizes]) != 0) return -1;
        o->nsizes++;
    }
    return o->nsizes > 0 ? 0 : -1;
}

static int parse_int(const char *s, int min, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min || v > INT_MAX) return -1;
    *out = (int)v;
    return 0;
}

static const char usage[] =
    "usage: epic_mpi_bench --collective allreduce|reduce|broadcast|barrier|reducescatter|"
    "allgather[,...]\n"
    "                      --sizes BYTES[,BYTES...] (K/M/G suffixes allowed)\n"
    "                      [--iters N (default 10)] [--warmup N (default 2)] [--root R (default 0)]\n";

/* Fills `o` from argv; on error writes a message into `err`. */
static int parse_args(int argc, char **argv, struct options *o, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    o->iters = 10;
    o->warmup = 2;
    int have_coll = 0, have_sizes = 0;
    for (int a = 1; a < argc; a++) {
        const char *flag = argv[a];
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            snprintf(err, errlen, "%s", "");
            return 1;
        }
        static const char *const flags[] = {"--collective", "--sizes", "--iters", "--warmup",
                                             "--root"};
        int which = -1;
        for (int f = 0; f < 5; f++) {
            if (strcmp(flag, flags[f]) == 0) which = f;
        }
        if (which < 0) {
            snprintf(err, errlen, "unknown argument %s", flag);
            return -1;
        }
        if (a + 1 >= argc) {
            snprintf(err, errlen, "%s needs a value", flag);
            return -1;
        }
        const char *val = argv[++a];
        int bad;
        switch (which) {
        case 0: bad = parse_collectives(val, o), have_coll = 1; break;
        case 1: bad = parse_sizes(val, o), have_sizes = 1; break;
        case 2: bad = parse_int(val, 1, &o->iters); break;
        case 3: bad = parse_int(val, 0, &o->warmup); break;
        default: bad = parse_int(val, 0, &o->root); break;
        }
        if (bad) {
            snprintf(err, errlen, "bad value for %s: %s", flag, val);
            return -1;
        }
    }
    if (!have_coll) {
        snprintf(err, errlen, "--collective is required");
        return -1;
    }
    int needs_sizes = 0;
    for (int c = 0; c < o->ncolls; c++) needs_sizes |= o->colls[c] != BARRIER;
    if (needs_sizes && !have_sizes) {
        snprintf(err, errlen, "--sizes is required");
        return -1;
    }
    return 0;
}

/* Buffers and shape of one (collective, size) point on this rank. */
struct point {
    int coll;
    int nranks, rank, root;
    long n;     /* elements of the whole vector */
    long block; /* n / nranks (ReduceScatter, AllGather) */
    float *send, *recv;
};

/* Sets the output to a value no correct result holds (-1). */
static void poison(struct point *p) {
    long len = 0;
    switch (p->coll) {
    case ALLREDUCE: case ALLGATHER: len = p->n; break;
    case REDUCE: len = p->rank == p->root ? p->n : 0; break;
    case REDUCESCATTER: len = p->block; break;
    case BROADCAST:
        if (p->rank != p->root) len = p->n;
        break;
    default: break;
    }
    for (long i = 0; i < len; i++) p->recv[i] = -1.0f;
}

static int call(struct point *p) {
    int n = (int)p->n, b = (int)p->block;
    switch (p->coll) {
    case ALLREDUCE:
        return MPI_Allreduce(p->send, p->recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    case REDUCE:
        return MPI_Reduce(p->send, p->recv, n, MPI_FLOAT, MPI_SUM, p->root, MPI_COMM_WORLD);
    case BROADCAST: return MPI_Bcast(p->recv, n, MPI_FLOAT, p->root, MPI_COMM_WORLD);
    case BARRIER: return MPI_Barrier(MPI_COMM_WORLD);
    case REDUCESCATTER:
        return MPI_Reduce_scatter_block(p->send, p->recv, b, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    case ALLGATHER:
        return MPI_Allgather(p->send, b, MPI_FLOAT, p->recv, b, MPI_FLOAT, MPI_COMM_WORLD);
    default: return MPI_ERR_ARG;
    }
}

/* Whether this rank's output is exactly what it must be. */
static int verify(const struct point *p) {
    const float *o = p->recv;
    switch (p->coll) {
    case ALLREDUCE:
        for (long i = 0; i < p->n; i++)
            if (o[i] != reduced(p->nranks, i)) return 0;
        return 1;
    case REDUCE:
        if (p->rank != p->root) return 1;
        for (long i = 0; i < p->n; i++)
            if (o[i] != reduced(p->nranks, i)) return 0;
        return 1;
    case BROADCAST:
        for (long i = 0; i < p->n; i++)
            if (o[i] != value(p->root, i)) return 0;
        return 1;
    case REDUCESCATTER:
        for (long j = 0; j < p->block; j++)
            if (o[j] != reduced(p->nranks, (long)p->rank * p->block + j)) return 0;
        return 1;
    case ALLGATHER:
        for (long i = 0; i < p->n; i++)
            if (o[i] != value((int)(i / p->block), i % p->block)) return 0;
        return 1;
    default: return 1;
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank quantile of sorted[0..len), as the lab's `quantile`. */
static double quantile(const double *sorted, int len, double q) {
    double x = q * len;
    long idx = (long)x;
    if ((double)idx < x) idx++; /* ceil(x) without libm */
    idx -= 1;
    if (idx < 0) idx = 0;
    if (idx >= len) idx = len - 1;
    return sorted[idx];
}

/* Runs one point; rank 0 prints its JSON line. Returns 0 or an MPI error. */
static int run_point(int coll, long long bytes, const struct options *o, int rank, int nranks) {
    struct point p = {.coll = coll, .nranks = nranks, .rank = rank, .root = o->root};
    long n = coll == BARRIER ? 0 : (long)(bytes / (long long)sizeof(float));
    if (coll == REDUCESCATTER || coll == ALLGATHER) {
        p.block = n / nranks > 0 ? n / nranks : 1;
        n = p.block * nranks;
    } else if (coll != BARRIER && n < 1) {
        n = 1;
    }
    p.n = n;
    long send_len = coll == ALLGATHER ? p.block : n;
    long recv_len = coll == REDUCESCATTER ? p.block : n;
    p.send = malloc((size_t)(send_len > 0 ? send_len : 1) * sizeof(float));
    p.recv = malloc((size_t)(recv_len > 0 ? recv_len : 1) * sizeof(float));
    double *lat = rank == 0 ? malloc((size_t)o->iters * sizeof(double)) : NULL;
    if (!p.send || !p.recv || (rank == 0 && !lat)) {
        fprintf(stderr, "epic_mpi_bench: out of memory for %lld bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    for (long i = 0; i < send_len; i++) p.send[i] = value(rank, i);
    if (coll == BROADCAST && rank == o->root) {
        for (long i = 0; i < n; i++) p.recv[i] = value(rank, i);
    }

    int ok = 1, rc = MPI_SUCCESS;
    for (int it = 0; it < o->warmup + o->iters && rc == MPI_SUCCESS; it++) {
        poison(&p);
        MPI_Barrier(MPI_COMM_WORLD);
        /* All ranks share one machine, hence one CLOCK_MONOTONIC: an
           iteration runs from the first rank's start to the last rank's
           completion, as the lab times EPIC. (Each rank's own duration
           would miss the barrier's exit skew: a broadcast receiver that
           leaves the barrier last may find its data already there.) */
        double t0 = now_s();
        rc = call(&p);
        double t1 = now_s();
        double first = 0.0, last = 0.0;
        ok &= rc == MPI_SUCCESS && verify(&p);
        MPI_Reduce(&t0, &first, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&t1, &last, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0 && it >= o->warmup) lat[it - o->warmup] = (last - first) * 1e6;
    }
    int all_ok = 0;
    MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    if (rank == 0 && rc == MPI_SUCCESS) {
        qsort(lat, (size_t)o->iters, sizeof(double), cmp_double);
        printf("{\"collective\":\"%s\",\"bytes\":%lld,\"ranks\":%d,\"iters\":%d,"
               "\"p50_us\":%.3f,\"p99_us\":%.3f,\"correct\":%s}\n",
               coll_names[coll], (long long)n * (long long)sizeof(float), nranks, o->iters,
               quantile(lat, o->iters, 0.5), quantile(lat, o->iters, 0.99),
               all_ok ? "true" : "false");
        fflush(stdout);
    }
    free(lat);
    free(p.send);
    free(p.recv);
    return rc;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, nranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    struct options o;
    char err[256] = "";
    int parsed = parse_args(argc, argv, &o, err, sizeof err);
    if (parsed == 0 && o.root >= nranks) {
        snprintf(err, sizeof err, "--root %d is not a rank (%d ranks)", o.root, nranks);
        parsed = -1;
    }
    if (parsed != 0) {
        if (rank == 0) {
            if (parsed < 0) fprintf(stderr, "epic_mpi_bench: %s\n", err);
            fputs(usage, parsed < 0 ? stderr : stdout);
        }
        MPI_Finalize();
        return parsed < 0 ? 2 : 0;
    }

    int rc = MPI_SUCCESS;
    for (int c = 0; c < o.ncolls && rc == MPI_SUCCESS; c++) {
        int coll = o.colls[c];
        int nsizes = coll == BARRIER ? 1 : o.nsizes;
        for (int s = 0; s < nsizes && rc == MPI_SUCCESS; s++) {
            rc = run_point(coll, coll == BARRIER ? 0 : o.sizes[s], &o, rank, nranks);
        }
    }
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "epic_mpi_bench: rank %d: MPI error: %s\n", rank, msg);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    MPI_Finalize();
    return 0;
}
