package snapcheck.flink;

import java.io.Serializable;

/**
 * A record travelling between traced operators, wrapped with its identity.
 *
 * <p>The identity names the sender incarnation that emitted it: the job generation {@code gen}
 * (0, then 1 after a restore at another parallelism, see {@link Main}), the sending operator
 * {@code op}, its subtask {@code src}, Flink's attempt number {@code att} of that subtask, and
 * {@code n}, the sender's output counter within that attempt (0, 1, 2, ...). A record from a
 * {@link GeneratorSource} has {@code op = "@input"}, {@code src} = its split, {@code att = -1} and
 * {@code n} = its offset in the split. The merger (flink/merge.py) maps the identity to
 * the trace's channel, per-channel sequence number and message id.
 *
 * <p>Because the identity is part of the record, a record that Flink persisted as channel state in
 * an unaligned checkpoint comes back after recovery with its old identity: that is how replays of
 * channel state are observed without access to Flink's internals.
 */
public class Envelope<T> implements Serializable {
    private static final long serialVersionUID = 1L;

    public int gen;
    public String op;
    public int src;
    public int att;
    public long n;
    public T payload;

    public Envelope() {}

    public Envelope(int gen, String op, int src, int att, long n, T payload) {
        this.gen = gen;
        this.op = op;
        this.src = src;
        this.att = att;
        this.n = n;
        this.payload = payload;
    }

    @Override
    public String toString() {
        return "g" + gen + "." + op + "[" + src + "]#" + att + ":" + n + "=" + payload;
    }
}
