/*
 * Writes a synthetic OGB node-property dataset in the csv layout (raw/ and
 * split/random/) for the conversion benchmark: N nodes, E directed edges
 * with power-law-ish sources, F random features a node printed like OGB's
 * (up to 6 decimals), C classes, a 60/20/20 split. gzip level 1 keeps the
 * generation quick; the benchmark reports uncompressed MB/s.
 *
 *   ogb_synth DIR N E F [C] [SEED]
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static gzFile open_gz(const char *dir, const char *name)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    gzFile z = gzopen(p, "wb1");
    if (!z) {
        fprintf(stderr, "ogb_synth: cannot write %s: %s\n", p, strerror(errno));
        exit(1);
    }
    gzbuffer(z, 1 << 20);
    return z;
}

static void close_gz(gzFile z)
{
    if (gzclose(z) != Z_OK) {
        fprintf(stderr, "ogb_synth: write failed\n");
        exit(1);
    }
}

/* Append a non-negative integer. */
static char *put_u(char *o, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10));
    while (n) *o++ = tmp[--n];
    return o;
}

/* Append x in [-1, 1) with 6 decimals, trailing zeros dropped ("-0.0625"). */
static char *put_f(char *o, int64_t micro)
{
    if (micro < 0) {
        *o++ = '-';
        micro = -micro;
    }
    o = put_u(o, (uint64_t)(micro / 1000000));
    int64_t frac = micro % 1000000;
    if (frac) {
        *o++ = '.';
        char d[6];
        for (int i = 5; i >= 0; i--) {
            d[i] = (char)('0' + frac % 10);
            frac /= 10;
        }
        int n = 6;
        while (n > 1 && d[n - 1] == '0') n--;
        memcpy(o, d, (size_t)n);
        o += n;
    }
    return o;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: ogb_synth DIR N E F [C] [SEED]\n");
        return 2;
    }
    const char *dir = argv[1];
    int64_t n = atoll(argv[2]), e = atoll(argv[3]), f = atoll(argv[4]);
    int64_t c = argc > 5 ? atoll(argv[5]) : 47;
    rng_state = argc > 6 ? strtoull(argv[6], NULL, 10) : 1;
    if (n <= 0 || e < 0 || f < 0 || c < 1) {
        fprintf(stderr, "ogb_synth: bad sizes\n");
        return 2;
    }
    char raw[4096], split[4096];
    snprintf(raw, sizeof raw, "%s/raw", dir);
    snprintf(split, sizeof split, "%s/split/random", dir);
    mkdir(dir, 0755);
    mkdir(raw, 0755);
    snprintf(split, sizeof split, "%s/split", dir);
    mkdir(split, 0755);
    snprintf(split, sizeof split, "%s/split/random", dir);
    mkdir(split, 0755);

    static char buf[1 << 22];
    gzFile z = open_gz(raw, "num-node-list.csv.gz");
    gzprintf(z, "%lld\n", (long long)n);
    close_gz(z);
    z = open_gz(raw, "num-edge-list.csv.gz");
    gzprintf(z, "%lld\n", (long long)e);
    close_gz(z);

    z = open_gz(raw, "edge.csv.gz");
    char *o = buf;
    for (int64_t i = 0; i < e; i++) {
        /* Sources skewed towards low ids (squared uniform), targets uniform. */
        double u = (double)(rng() >> 11) / 9007199254740992.0;
        uint64_t s = (uint64_t)(u * u * (double)n), d = rng() % (uint64_t)n;
        o = put_u(o, s);
        *o++ = ',';
        o = put_u(o, d);
        *o++ = '\n';
        if (o - buf > (long)sizeof buf - 64) {
            gzwrite(z, buf, (unsigned)(o - buf));
            o = buf;
        }
    }
    gzwrite(z, buf, (unsigned)(o - buf));
    close_gz(z);

    if (f > 0) {
        z = open_gz(raw, "node-feat.csv.gz");
        o = buf;
        for (int64_t v = 0; v < n; v++) {
            for (int64_t j = 0; j < f; j++) {
                o = put_f(o, (int64_t)(rng() % 2000000) - 1000000);
                *o++ = j + 1 < f ? ',' : '\n';
            }
            if (o - buf > (long)sizeof buf - 32 * f - 64) {
                gzwrite(z, buf, (unsigned)(o - buf));
                o = buf;
            }
        }
        gzwrite(z, buf, (unsigned)(o - buf));
        close_gz(z);
    }

    z = open_gz(raw, "node-label.csv.gz");
    o = buf;
    for (int64_t v = 0; v < n; v++) {
        o = put_u(o, rng() % (uint64_t)c);
        *o++ = '\n';
        if (o - buf > (long)sizeof buf - 64) {
            gzwrite(z, buf, (unsigned)(o - buf));
            o = buf;
        }
    }
    gzwrite(z, buf, (unsigned)(o - buf));
    close_gz(z);

    const char *names[] = {"train.csv.gz", "valid.csv.gz", "test.csv.gz"};
    for (int s = 0; s < 3; s++) {
        z = open_gz(split, names[s]);
        int64_t lo = s == 0 ? 0 : s == 1 ? n * 6 / 10 : n * 8 / 10;
        int64_t hi = s == 0 ? n * 6 / 10 : s == 1 ? n * 8 / 10 : n;
        for (int64_t v = lo; v < hi; v++) gzprintf(z, "%lld\n", (long long)v);
        close_gz(z);
    }
    printf("ogb_synth: wrote %s: %lld nodes, %lld edges, %lld features\n", dir, (long long)n,
           (long long)e, (long long)f);
    return 0;
}
