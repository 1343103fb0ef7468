package snapcheck.flink;

import java.io.Serializable;

/**
 * A deterministic, replayable input: the record at {@code offset} of split {@code split} is always
 * the same, so a source restored to an offset re-reads exactly what it read before.
 */
@FunctionalInterface
public interface Generator<T> extends Serializable {
    T generate(int split, long offset);

    /** SplitMix64: a well-mixed 64-bit hash, the basis of the jobs' deterministic data. */
    static long mix(long seed, long a, long b) {
        long z = seed * 0x9E3779B97F4A7C15L + a * 0xBF58476D1CE4E5B9L + b * 0x94D049BB133111EBL;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return (z ^ (z >>> 31)) & Long.MAX_VALUE;
    }
}
