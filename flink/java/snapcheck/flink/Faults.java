package snapcheck.flink;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Failure injection: a list of specs {@code OP:SUBTASK:COUNT} (fail when that subtask is about to
 * process its COUNT-th record of the current attempt) or {@code OP:SUBTASK:@MS} (fail at the first
 * record processed at least MS milliseconds after the first source record was read). Each spec fires once per run
 * (a JVM-wide registry remembers it), so a restarted subtask does not fail again.
 */
public final class Faults implements Serializable {
    private static final long serialVersionUID = 1L;
    /** spec -> t (microseconds since the run started) at which it fired. */
    static final Map<String, Long> FIRED = new ConcurrentHashMap<>();

    static final class Spec implements Serializable {
        private static final long serialVersionUID = 1L;
        final String text;
        final String op;
        final int subtask;
        final long count;     // -1 when time-based
        final long atMillis;  // -1 when count-based

        Spec(String text) {
            String[] p = text.split(":");
            if (p.length != 3) {
                throw new IllegalArgumentException("bad --fail spec '" + text + "': expected OP:SUBTASK:COUNT or OP:SUBTASK:@MS");
            }
            this.text = text;
            this.op = p[0];
            this.subtask = Integer.parseInt(p[1]);
            if (p[2].startsWith("@")) {
                this.count = -1;
                this.atMillis = Long.parseLong(p[2].substring(1));
            } else {
                this.count = Long.parseLong(p[2]);
                this.atMillis = -1;
            }
        }
    }

    private final List<Spec> specs = new ArrayList<>();

    public Faults(List<String> texts) {
        for (String t : texts) {
            specs.add(new Spec(t));
        }
    }

    List<Spec> forSubtask(String op, int subtask) {
        List<Spec> out = new ArrayList<>();
        for (Spec s : specs) {
            if (s.op.equals(op) && s.subtask == subtask) {
                out.add(s);
            }
        }
        return out;
    }

    List<Spec> all() {
        return specs;
    }

    /** The spec that fires now (and is marked fired), or null. */
    static Spec due(List<Spec> mine, long processed) {
        for (Spec s : mine) {
            if (FIRED.containsKey(s.text)) {
                continue;
            }
            boolean now = s.count >= 0
                    ? processed + 1 >= s.count
                    : Registry.firstRead != 0 && (System.nanoTime() - Registry.firstRead) / 1_000_000 >= s.atMillis;
            if (now && FIRED.putIfAbsent(s.text, (System.nanoTime() - TraceLog.t0) / 1000) == null) {
                return s;
            }
        }
        return null;
    }

    /** Thrown to fail a subtask on purpose. */
    public static final class InjectedFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        InjectedFailure(String msg) {
            super(msg);
        }
    }
}
