/* NCCL's identity of a communicator (its commHash), computed as NCCL 2.28 computes it, so that
 * every rank names a communicator alike without asking NCCL (src/init.cc, ncclCommInitRankFunc;
 * the hash functions are src/include/bitops.h's eatHash, digestHash and getHash):
 *   - ncclCommInitRank, ...Config, ...Scalable (its first id), ncclCommInitAll: getHash of the
 *     unique id's 128 bytes;
 *   - ncclCommSplit: a hash of the parent's commHash (8 bytes), the parent's split count after
 *     this split (NCCL's childCount, an int: 1 for its first split; every split call counts,
 *     NCCL_SPLIT_NOCOLOR included) and the color (an int), each eaten separately. The key is not
 *     part of it: it differs by rank.
 * Plain C (static inline), shared by the shim (shim/nccl) and the simulated libnccl.so.2
 * (tests/simnccl), which names its rendezvous by it. */
#ifndef COLABTRACE_NCCL_COMM_HASH_H
#define COLABTRACE_NCCL_COMM_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* eatHash: mixes `size` bytes into the accumulator; where the bytes are split between calls
 * changes the hash. */
static inline void ct_nccl_eat_hash(uint64_t acc[2], const void *bytes, size_t size) {
  const unsigned char *p = (const unsigned char *)bytes;
  acc[0] ^= size;
  while (size != 0) {
    acc[0] += acc[1];
    acc[1] ^= acc[0];
    acc[0] ^= acc[0] >> 31;
    acc[0] *= 0x9de62bbc8cef3ce3ull;
    acc[1] ^= acc[1] >> 32;
    acc[1] *= 0x485cd6311b599e79ull;
    const size_t chunk = size < 8 ? size : 8;
    uint64_t x = 0;
    memcpy(&x, p, chunk);
    p += chunk;
    size -= chunk;
    acc[0] += x;
  }
}

static inline uint64_t ct_nccl_digest_hash(const uint64_t acc[2]) {
  uint64_t h = acc[0];
  h ^= h >> 31;
  h *= 0xbac3bd562846de6bull;
  h += acc[1];
  h ^= h >> 32;
  h *= 0x995a187a14e7b445ull;
  return h;
}

/* The communicator of a unique id (128 bytes). */
static inline uint64_t ct_nccl_id_hash(const void *id128) {
  uint64_t acc[2] = {1, 1};
  ct_nccl_eat_hash(acc, id128, 128);
  return ct_nccl_digest_hash(acc);
}

/* The child of parent_hash made by its split_count-th split, for `color`. */
static inline uint64_t ct_nccl_split_hash(uint64_t parent_hash, int32_t split_count, int32_t color) {
  uint64_t acc[2] = {1, 1};
  ct_nccl_eat_hash(acc, &parent_hash, sizeof parent_hash);
  ct_nccl_eat_hash(acc, &split_count, sizeof split_count);
  ct_nccl_eat_hash(acc, &color, sizeof color);
  return ct_nccl_digest_hash(acc);
}

#endif
