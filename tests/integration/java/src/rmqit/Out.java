package rmqit;

import java.io.PrintStream;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/** Writes one JSON object per line to the real stdout, from any thread (client callbacks included). */
final class Out {
    private final PrintStream stream;
    private final ReentrantLock lock = new ReentrantLock();

    Out(PrintStream stream) {
        this.stream = stream;
    }

    private static String line(String event, Map<String, Object> fields) {
        Json.Obj all = Json.obj().with("event", event);
        if (fields != null) {
            all.putAll(fields);
        }
        return Json.write(all);
    }

    void emit(String event, Map<String, Object> fields) {
        String text = line(event, fields);
        lock.lock();
        try {
            stream.print(text);
            stream.print('\n');
            stream.flush();
        } finally {
            lock.unlock();
        }
    }

    void emit(String event) {
        emit(event, null);
    }

    /** Like {@link #emit} but gives up after a second: the watchdog must exit even if stdout is stuck. */
    void tryEmit(String event, Map<String, Object> fields) {
        String text = line(event, fields);
        try {
            if (lock.tryLock(1, TimeUnit.SECONDS)) {
                try {
                    stream.print(text);
                    stream.print('\n');
                    stream.flush();
                } finally {
                    lock.unlock();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    void flush() {
        stream.flush();
    }
}
