package org.rdmashuffle.hadoop;

import java.io.IOException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RawKeyValueIterator;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.mapred.ShuffleConsumerPlugin;
import org.apache.hadoop.mapred.Task;
import org.apache.hadoop.mapred.TaskStatus;
import org.apache.hadoop.mapred.TaskUmbilicalProtocol;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.task.reduce.ExceptionReporter;
import org.apache.hadoop.mapreduce.task.reduce.MergeManagerImpl;
import org.apache.hadoop.mapreduce.task.reduce.Shuffle;
import org.apache.hadoop.mapreduce.task.reduce.ShuffleClientMetrics;
import org.apache.hadoop.mapreduce.task.reduce.ShuffleSchedulerImpl;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.config.EngineConfig;

/**
 * A reduce task's shuffle over RDMA: what {@link RdmaShuffleConsumerPlugin} (the class MapReduce loads
 * by name, built for Java 17) hands the task to where the JVM can run the engine; built for the
 * engine's Java.
 *
 * <p>It is the stock {@link Shuffle} with other fetchers: MapReduce's own scheduler learns of map
 * outputs from the application master and hands out hosts, its merge manager keeps outputs in memory
 * or on disk and merges them, and failed fetches are reported through the scheduler, so the
 * application master re-runs maps whose outputs are lost. The fetchers ({@link RdmaFetcher}) read each
 * host's map outputs from the node's {@link RdmaShuffleService} with the engine, authenticated with
 * the job's shuffle secret.
 *
 * <p>Settings: every {@code rdma.shuffle.*} value is checked as the task starts ({@link HadoopSettingsCheck}).
 *
 * <p>Fallback ({@code rdma.shuffle.mapreduce.fallback}, on by default): without a usable verbs
 * provider the whole task runs the stock shuffle; a node whose service cannot be reached is fetched
 * from over HTTP. Each says so once in the task log. Off, either fails the fetch.
 */
public final class EngineShuffleConsumer<K, V> implements ShuffleConsumerPlugin<K, V>, ExceptionReporter {
    private static final System.Logger LOG = System.getLogger(EngineShuffleConsumer.class.getName());
    private static final int MIN_EVENTS_TO_FETCH = 100;
    private static final int MAX_EVENTS_TO_FETCH = 10000;
    private static final int MAX_RPC_OUTSTANDING_EVENTS = 3000000;
    private static final int PROGRESS_MILLIS = 2000;

    private Context<K, V> context;
    private JobConf jobConf;
    private TaskAttemptID reduceId;
    private Shuffle<K, V> stock;
    private RdmaShuffleEngine engine;
    private ShuffleSchedulerImpl<K, V> scheduler;
    private MergeManagerImpl<K, V> merger;
    private ShuffleClientMetrics metrics;
    private boolean fallback;
    private Throwable failure;
    private String failedThread;
    private final Set<String> httpHosts = ConcurrentHashMap.newKeySet();

    @Override
    public void init(Context<K, V> context) {
        this.context = context;
        this.jobConf = context.getJobConf();
        this.reduceId = context.getReduceId();
        // A bad rdma.shuffle.* value fails the task naming it (strictConfig=false: one WARN), rather than the
        // engine's start failing on it and the task quietly taking the stock shuffle.
        HadoopSettingsCheck.check(jobConf, "reduce task " + reduceId);
        fallback = jobConf.getBoolean(HadoopSettings.MAPREDUCE_FALLBACK, true);
        if (context.getLocalMapFiles() != null) {
            // Maps ran in this JVM (an uber or local job): nothing to fetch over the network.
            useStockShuffle();
            return;
        }
        try {
            engine = startEngine();
        } catch (RuntimeException e) {
            if (!fallback) {
                throw new IllegalStateException("rdma-shuffle: cannot start the engine for " + reduceId + " ("
                        + HadoopSettings.MAPREDUCE_FALLBACK + "=false): " + e.getMessage(), e);
            }
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: cannot start the engine (" + e.getMessage()
                    + "); " + reduceId + " uses the stock shuffle");
            useStockShuffle();
            return;
        }
        metrics = ShuffleClientMetrics.create(reduceId, jobConf);
        scheduler = new ShuffleSchedulerImpl<>(jobConf, context.getStatus(), reduceId, this, context.getCopyPhase(),
                context.getShuffledMapsCounter(), context.getReduceShuffleBytes(), context.getFailedShuffleCounter());
        merger = new MergeManagerImpl<>(reduceId, jobConf, context.getLocalFS(), context.getLocalDirAllocator(),
                context.getReporter(), context.getCodec(), context.getCombinerClass(), context.getCombineCollector(),
                context.getSpilledRecordsCounter(), context.getReduceCombineInputCounter(),
                context.getMergedMapOutputsCounter(), this, context.getMergePhase(), context.getMapOutputFile());
    }

    private void useStockShuffle() {
        stock = new Shuffle<>();
        stock.init(context);
    }

    private RdmaShuffleEngine startEngine() {
        String host = jobConf.get(HadoopSettings.PREFIX + EngineConfig.KEY_BIND_ADDRESS,
                HadoopSettings.nodeAddress(System.getenv(HadoopSettings.CONTAINER_NODE_HOST)));
        EngineConfig config = HadoopSettings.engineConfig(jobConf, host, 0);
        String app = MapReduceIds.applicationOf(reduceId.getJobID());
        javax.crypto.SecretKey secret = context.getReduceTask().getShuffleSecret();
        RdmaShuffleEngine e = RdmaShuffleEngine.start(config, app,
                secret == null ? null : MapReduceIds.engineSecret(secret.getEncoded()));
        // The task's log says what carries its shuffle (an operator's first question; the cross-host test's too).
        LOG.log(System.Logger.Level.INFO, "rdma-shuffle: " + reduceId + " fetches with the engine: "
                + e.carrier() + " (provider " + e.providerName() + ", control " + e.address().getHostString() + ")");
        return e;
    }

    @Override
    public RawKeyValueIterator run() throws IOException, InterruptedException {
        if (stock != null) {
            return stock.run();
        }
        int eventsPerReducer = Math.max(MIN_EVENTS_TO_FETCH, MAX_RPC_OUTSTANDING_EVENTS / jobConf.getNumReduceTasks());
        TaskUmbilicalProtocol umbilical = context.getUmbilical();
        MapCompletionEvents events = new MapCompletionEvents(reduceId, umbilical, scheduler, this,
                Math.min(MAX_EVENTS_TO_FETCH, eventsPerReducer));
        events.start();
        Reporter reporter = context.getReporter();
        int fetcherCount = jobConf.getInt(MRJobConfig.SHUFFLE_PARALLEL_COPIES, 5);
        @SuppressWarnings("unchecked")
        RdmaFetcher<K, V>[] fetchers = new RdmaFetcher[fetcherCount];
        for (int i = 0; i < fetcherCount; i++) {
            fetchers[i] = new RdmaFetcher<>(jobConf, reduceId, scheduler, merger, reporter, metrics, this,
                    context.getReduceTask().getShuffleSecret(), engine, HadoopSettings.servicePort(jobConf), fallback,
                    httpHosts);
            fetchers[i].start();
        }
        try {
            while (!scheduler.waitUntilDone(PROGRESS_MILLIS)) {
                reporter.progress();
                throwIfFailed();
            }
        } finally {
            events.shutDown();
            for (RdmaFetcher<K, V> f : fetchers) {
                f.shutDown();
            }
            scheduler.close();
        }
        context.getCopyPhase().complete();
        TaskStatus status = context.getStatus();
        status.setPhase(TaskStatus.Phase.SORT);
        Task reduceTask = context.getReduceTask();
        reduceTask.statusUpdate(umbilical);
        RawKeyValueIterator merged;
        try {
            merged = merger.close();
        } catch (Throwable e) {
            throw new IOException("rdma-shuffle: the final merge of " + reduceId + " failed", e);
        }
        throwIfFailed();
        return merged;
    }

    private synchronized void throwIfFailed() throws IOException {
        if (failure != null) {
            throw new IOException("rdma-shuffle: error in " + failedThread + " of " + reduceId + ": " + failure, failure);
        }
    }

    @Override
    public synchronized void reportException(Throwable t) {
        if (failure == null) {
            failure = t;
            failedThread = Thread.currentThread().getName();
        }
    }

    @Override
    public void close() {
        if (stock != null) {
            stock.close();
        }
        if (engine != null) {
            engine.close();
        }
    }
}
