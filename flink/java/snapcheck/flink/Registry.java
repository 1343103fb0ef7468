package snapcheck.flink;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * JVM-wide run state shared between the traced subtasks and the driver ({@link Main}) of a
 * MiniCluster run: which source readers are live and done, and when a checkpoint last completed.
 * The driver ends a run when every source reader of the current attempt has emitted all its
 * records, no record was sent or processed for a quiet period, and a checkpoint completed after
 * the sources became done.
 */
final class Registry {
    private Registry() {}

    /** "op/subtask" -> state of its current reader: 0 emitting, 1 done, 2 closed. */
    static final Map<String, Integer> READERS = new ConcurrentHashMap<>();
    static volatile long lastCompletion = 0;
    /** When (nanoTime) the first source record of the run was read; 0 before. */
    static volatile long firstRead = 0;

    /** "gen/op/subtask" -> the traced core of the current attempt (a source reader logs its splits there). */
    static final Map<String, TracedCore<?>> CORES = new ConcurrentHashMap<>();

    static void core(int gen, String op, int subtask, TracedCore<?> core) {
        CORES.put(gen + "/" + op + "/" + subtask, core);
    }

    static TracedCore<?> core(int gen, String op, int subtask) {
        return CORES.get(gen + "/" + op + "/" + subtask);
    }

    /** Forget the readers of the previous job generation (the JVM runs the next one). */
    static void nextGeneration() {
        READERS.clear();
        lastCompletion = 0;
    }

    static void reader(String op, int subtask, int state) {
        READERS.put(op + "/" + subtask, state);
    }

    static void completed() {
        lastCompletion = System.nanoTime();
    }

    static boolean allDone(int expected) {
        if (READERS.size() < expected) {
            return false;
        }
        for (int s : READERS.values()) {
            if (s != 1) {
                return false;
            }
        }
        return true;
    }
}
