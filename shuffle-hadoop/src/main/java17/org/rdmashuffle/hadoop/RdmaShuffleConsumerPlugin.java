package org.rdmashuffle.hadoop;

import java.io.IOException;
import java.util.Optional;

import org.apache.hadoop.mapred.RawKeyValueIterator;
import org.apache.hadoop.mapred.ShuffleConsumerPlugin;
import org.apache.hadoop.mapreduce.task.reduce.Shuffle;
import org.rdmashuffle.verbs.EngineRuntime;

/**
 * A reduce task's shuffle over RDMA, selected with {@code
 * mapreduce.job.reduce.shuffle.consumer.plugin.class=org.rdmashuffle.hadoop.RdmaShuffleConsumerPlugin}:
 * the class MapReduce loads by name, built for Java 17 (src/main/java17) so a task on any JVM Hadoop 3.5
 * runs on loads it. Where the JVM can run the engine, the task's shuffle is {@code
 * EngineShuffleConsumer}'s (made by name); where it cannot, the stock {@link Shuffle}'s over HTTP, with
 * one WARN naming the reason ({@code RS09 jvm}); with {@code rdma.shuffle.mapreduce.fallback=false} the
 * task fails instead.
 */
public class RdmaShuffleConsumerPlugin<K, V> implements ShuffleConsumerPlugin<K, V> {
    private static final System.Logger LOG = System.getLogger(RdmaShuffleConsumerPlugin.class.getName());
    /** The job setting that selects this class. */
    public static final String CONSUMER_PLUGIN_KEY = "mapreduce.job.reduce.shuffle.consumer.plugin.class";
    /** The engine's consumer, built for the engine's Java. */
    static final String ENGINE_CONSUMER = "org.rdmashuffle.hadoop.EngineShuffleConsumer";

    private ShuffleConsumerPlugin<K, V> delegate;

    @Override
    @SuppressWarnings("unchecked")
    public void init(Context<K, V> context) {
        Optional<String> why = EngineRuntime.unavailable();
        if (why.isEmpty()) {
            delegate = EngineRuntime.load(RdmaShuffleConsumerPlugin.class, ShuffleConsumerPlugin.class, ENGINE_CONSUMER, new Class<?>[0]);
        } else {
            if (!context.getJobConf().getBoolean(HadoopKeys.MAPREDUCE_FALLBACK, true)) {
                throw new IllegalStateException("rdma-shuffle cannot run in this JVM and " + HadoopKeys.MAPREDUCE_FALLBACK
                        + "=false: " + why.get());
            }
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: " + context.getReduceId()
                    + " uses the stock shuffle (HTTP): " + why.get());
            delegate = new Shuffle<>();
        }
        delegate.init(context);
    }

    @Override
    public RawKeyValueIterator run() throws IOException, InterruptedException {
        return delegate.run();
    }

    @Override
    public void close() {
        if (delegate != null) {
            delegate.close();
        }
    }
}
