package org.rdmashuffle.hadoop;

import java.io.IOException;

import org.apache.hadoop.mapred.JobID;
import org.apache.hadoop.mapred.MapTaskCompletionEventsUpdate;
import org.apache.hadoop.mapred.TaskCompletionEvent;
import org.apache.hadoop.mapred.TaskUmbilicalProtocol;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.task.reduce.ExceptionReporter;
import org.apache.hadoop.mapreduce.task.reduce.ShuffleSchedulerImpl;

/**
 * Asks the application master for map completion events once a second and hands them to the
 * scheduler: succeeded maps become outputs to fetch, obsolete or failed ones are dropped (what the
 * stock shuffle's package-private EventFetcher does). Five failed asks in a row end the shuffle.
 */
final class MapCompletionEvents extends Thread {
    private static final long POLL_MILLIS = 1000;
    private static final long RETRY_MILLIS = 5000;
    private static final int MAX_FAILURES = 5;

    private final TaskAttemptID reduce;
    private final TaskUmbilicalProtocol umbilical;
    private final ShuffleSchedulerImpl<?, ?> scheduler;
    private final ExceptionReporter exceptions;
    private final int maxEventsPerCall;
    private int fromEvent;
    private volatile boolean stopped;

    MapCompletionEvents(TaskAttemptID reduce, TaskUmbilicalProtocol umbilical, ShuffleSchedulerImpl<?, ?> scheduler,
                        ExceptionReporter exceptions, int maxEventsPerCall) {
        super("rdma-shuffle-map-events for " + reduce);
        setDaemon(true);
        this.reduce = reduce;
        this.umbilical = umbilical;
        this.scheduler = scheduler;
        this.exceptions = exceptions;
        this.maxEventsPerCall = maxEventsPerCall;
    }

    @Override
    public void run() {
        int failures = 0;
        try {
            while (!stopped && !isInterrupted()) {
                try {
                    pollOnce();
                    failures = 0;
                    Thread.sleep(POLL_MILLIS);
                } catch (IOException e) {
                    if (++failures >= MAX_FAILURES) {
                        throw new IOException("rdma-shuffle: " + failures + " failed requests for map completion events", e);
                    }
                    Thread.sleep(RETRY_MILLIS);
                }
            }
        } catch (InterruptedException stop) {
            // shut down
        } catch (Throwable t) {
            exceptions.reportException(t);
        }
    }

    /** Fetches every new event (several calls when there are many). */
    void pollOnce() throws IOException {
        TaskCompletionEvent[] events;
        do {
            MapTaskCompletionEventsUpdate update = umbilical.getMapCompletionEvents((JobID) reduce.getJobID(), fromEvent,
                    maxEventsPerCall, (org.apache.hadoop.mapred.TaskAttemptID) reduce);
            events = update.getMapTaskCompletionEvents();
            fromEvent += events.length;
            for (TaskCompletionEvent e : events) {
                scheduler.resolve(e);
            }
        } while (events.length == maxEventsPerCall);
    }

    void shutDown() throws InterruptedException {
        stopped = true;
        interrupt();
        join(5000);
    }
}
