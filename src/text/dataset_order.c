/* dataset_order.c — which prompt a global sample index draws: epochs over
 * the prompt set, each epoch a keyed permutation evaluated at one point.
 *
 * The permutation is a balanced 4-round Feistel network over 2^(2h) >= n
 * values (Luby–Rackoff: four rounds of a keyed round function make a
 * pseudorandom permutation), its round keys from the counter-based RNG
 * (seed, RNG_DATA, epoch, round and half), cycle-walked into [0, n): a value
 * that lands at n or above is permuted again until it lands below n, which
 * keeps it a bijection of [0, n). Since 2^(2h) < 4n, the walk takes under 4
 * rounds on average. No table, no state: any rank computes any index alone,
 * in O(1), and the same seed gives the same sequence in every run. */
#include "nereus/dataset.h"
#include "nereus/util.h"

#define FEISTEL_ROUNDS 4

/* one pass of the network over x in [0, 2^(2h)) */
static uint64_t feistel(uint64_t x, int h, uint64_t seed, uint64_t epoch) {
    uint64_t mask = (1ull << h) - 1, l = x >> h, r = x & mask;
    for (uint64_t round = 0; round < FEISTEL_ROUNDS; round++) {
        uint64_t f = rng_u64(seed, RNG_DATA, epoch, round << 32 | r) & mask;
        uint64_t next = l ^ f;
        l = r;
        r = next;
    }
    return l << h | r;
}

int dataset_prompt_of(const PromptSet *ps, uint64_t seed, int64_t g) {
    if (ps->n < 1 || g < 0) return -1;
    uint64_t n = (uint64_t)ps->n, epoch = (uint64_t)g / n, x = (uint64_t)g % n;
    int h = 1;
    while ((1ull << (2 * h)) < n) h++;
    do x = feistel(x, h, seed, epoch);
    while (x >= n);
    return (int)x;
}
