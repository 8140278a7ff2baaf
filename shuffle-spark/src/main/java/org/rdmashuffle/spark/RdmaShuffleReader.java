package org.rdmashuffle.spark;

import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.Aggregator;
import org.apache.spark.InterruptibleIterator;
import org.apache.spark.MapOutputTracker;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.internal.config.package$;
import org.apache.spark.io.CompressionCodec$;
import org.apache.spark.serializer.SerializerInstance;
import org.apache.spark.serializer.SerializerManager;
import org.apache.spark.shuffle.BaseShuffleHandle;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.BlockManager;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.ShuffleBlockFetcherIterator;
import org.apache.spark.util.CompletionIterator$;
import org.apache.spark.util.SystemClock;
import org.apache.spark.util.collection.ExternalSorter;
import org.rdmashuffle.core.RdmaShuffleEngine;
import scala.Option;
import scala.Product2;
import scala.Tuple2;
import scala.Tuple3;
import scala.collection.Iterator;
import scala.collection.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.math.Ordering;
import scala.runtime.BoxedUnit;

/**
 * Spark's shuffle read path, as {@code BlockStoreShuffleReader} builds it, with one change: the
 * fetch iterator's block store client is an {@link RdmaBlockStoreClient}. Everything the iterator
 * does stays Spark's: local and host-local blocks, batch fetch, the in-flight limits, corruption
 * detection and checksum diagnosis, {@code FetchFailedException}s with map id and index, metrics.
 * Deserialization, aggregation and sorting follow Spark's reader step for step.
 */
final class RdmaShuffleReader<K, C> implements ShuffleReader<K, C> {
    private final BaseShuffleHandle<K, ?, C> handle;
    private final Iterator<Tuple2<BlockManagerId, Seq<Tuple3<BlockId, Object, Object>>>> blocksByAddress;
    private final TaskContext context;
    private final ShuffleReadMetricsReporter readMetrics;
    private final boolean shouldBatchFetch;
    private final EngineShuffleManager manager;
    private final RdmaShuffleEngine engine;

    RdmaShuffleReader(BaseShuffleHandle<K, ?, C> handle,
                      Iterator<Tuple2<BlockManagerId, Seq<Tuple3<BlockId, Object, Object>>>> blocksByAddress,
                      TaskContext context, ShuffleReadMetricsReporter readMetrics, boolean shouldBatchFetch,
                      EngineShuffleManager manager, RdmaShuffleEngine engine) {
        this.handle = handle;
        this.blocksByAddress = blocksByAddress;
        this.context = context;
        this.readMetrics = readMetrics;
        this.shouldBatchFetch = shouldBatchFetch;
        this.manager = manager;
        this.engine = engine;
    }

    /**
     * The engines of the executors (or node services) this task will fetch from over the network: not
     * its own executor's, and not those on its own host when Spark reads host-local blocks from disk.
     */
    private static List<InetSocketAddress> peersToFetchFrom(
            List<Tuple2<BlockManagerId, Seq<Tuple3<BlockId, Object, Object>>>> byAddress, BlockManager blockManager) {
        BlockManagerId self = blockManager.blockManagerId();
        boolean hostLocalFromDisk = blockManager.hostLocalDirManager().isDefined();
        List<InetSocketAddress> peers = new ArrayList<>();
        for (Tuple2<BlockManagerId, Seq<Tuple3<BlockId, Object, Object>>> t : byAddress) {
            BlockManagerId id = t._1();
            InetSocketAddress a = EngineShuffleManager.engineAddress(id);
            if (a != null && !id.executorId().equals(self.executorId())
                    && !(hostLocalFromDisk && id.host().equals(self.host()))) {
                peers.add(a);
            }
        }
        return peers;
    }

    /** Spark's conditions for fetching contiguous partitions of a map output as one block. */
    private boolean fetchContinuousBlocksInBatch(SparkConf conf, ShuffleDependency<K, ?, C> dep) {
        boolean compressed = (Boolean) conf.get(package$.MODULE$.SHUFFLE_COMPRESS());
        boolean codecConcatenation = !compressed || CompressionCodec$.MODULE$.supportsConcatenationOfSerializedStreams(
                CompressionCodec$.MODULE$.createCodec(conf));
        return shouldBatchFetch && dep.serializer().supportsRelocationOfSerializedObjects() && codecConcatenation
                && !(Boolean) conf.get(package$.MODULE$.SHUFFLE_USE_OLD_FETCH_PROTOCOL())
                && !(Boolean) conf.get(package$.MODULE$.IO_ENCRYPTION_ENABLED()); // SPARK-34790
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public Iterator<Product2<K, C>> read() {
        SparkEnv env = SparkEnv.get();
        SparkConf conf = env.conf();
        BlockManager blockManager = env.blockManager();
        SerializerManager serializerManager = env.serializerManager();
        MapOutputTracker tracker = env.mapOutputTracker();
        ShuffleDependency<K, ?, C> dep = (ShuffleDependency<K, ?, C>) (ShuffleDependency) handle.dependency();

        // Where each serving executor's engine listens: carried by the map output locations.
        List<Tuple2<BlockManagerId, Seq<Tuple3<BlockId, Object, Object>>>> byAddress = new ArrayList<>();
        Map<String, InetSocketAddress> engines = new HashMap<>();
        while (blocksByAddress.hasNext()) {
            Tuple2<BlockManagerId, Seq<Tuple3<BlockId, Object, Object>>> t = blocksByAddress.next();
            byAddress.add(t);
            InetSocketAddress a = EngineShuffleManager.engineAddress(t._1());
            if (a != null) {
                engines.put(t._1().executorId(), a);
            }
        }
        if (engine != null) {
            // Spark asks only as many peers as its bytes in flight allow; the rest are asked as those
            // blocks arrive. Connecting to all of them now keeps their set-ups out of the later waits.
            engine.connectAhead(peersToFetchFrom(byAddress, blockManager));
        }
        RdmaBlockStoreClient client = manager.blockStoreClient(engine, engines, blockManager.blockStoreClient());

        Iterator<Tuple2<BlockId, InputStream>> streams = new ShuffleBlockFetcherIterator(
                context,
                client,
                blockManager,
                tracker,
                CollectionConverters.asScala(byAddress.iterator()),
                serializerManager::wrapStream,
                // Note: Spark reads this size in MiB
                (Long) conf.get(package$.MODULE$.REDUCER_MAX_SIZE_IN_FLIGHT()) * 1024 * 1024,
                (Integer) conf.get(package$.MODULE$.REDUCER_MAX_REQS_IN_FLIGHT()),
                (Integer) conf.get(package$.MODULE$.REDUCER_MAX_BLOCKS_IN_FLIGHT_PER_ADDRESS()),
                (Long) conf.get(package$.MODULE$.MAX_REMOTE_BLOCK_SIZE_FETCH_TO_MEM()),
                (Integer) conf.get(package$.MODULE$.SHUFFLE_MAX_ATTEMPTS_ON_NETTY_OOM()),
                (Boolean) conf.get(package$.MODULE$.SHUFFLE_DETECT_CORRUPT()),
                (Boolean) conf.get(package$.MODULE$.SHUFFLE_DETECT_CORRUPT_MEMORY()),
                (Boolean) conf.get(package$.MODULE$.SHUFFLE_CHECKSUM_ENABLED()),
                conf.get(package$.MODULE$.SHUFFLE_CHECKSUM_ALGORITHM()),
                readMetrics,
                fetchContinuousBlocksInBatch(conf, dep),
                new SystemClock()).toCompletionIterator();

        SerializerInstance serializer = dep.serializer().newInstance();
        // One key/value iterator per stream; each closes its stream when drained.
        Iterator<Tuple2<Object, Object>> records = streams.flatMap(
                s -> serializer.deserializeStream(s._2()).asKeyValueIterator());
        Iterator<Tuple2<Object, Object>> counted = CompletionIterator$.MODULE$.apply(records.map(r -> {
            readMetrics.incRecordsRead(1);
            return r;
        }), () -> {
            context.taskMetrics().mergeShuffleReadMetrics();
            return BoxedUnit.UNIT;
        });
        // Interruptible, so a cancelled task stops reading.
        Iterator<Product2<K, C>> interruptible = (Iterator) new InterruptibleIterator<>(context, counted);

        Iterator<Product2<K, C>> aggregated;
        Option<Aggregator<K, ?, C>> aggregator = (Option) dep.aggregator();
        if (aggregator.isDefined()) {
            Aggregator<K, Object, C> agg = (Aggregator<K, Object, C>) aggregator.get();
            aggregated = dep.mapSideCombine()
                    ? (Iterator) agg.combineCombinersByKey((Iterator) interruptible, context)
                    : (Iterator) agg.combineValuesByKey((Iterator) interruptible, context);
        } else {
            aggregated = interruptible;
        }

        Iterator<Product2<K, C>> result;
        Option<Ordering<K>> ordering = dep.keyOrdering();
        if (ordering.isDefined()) {
            ExternalSorter<K, C, C> sorter = new ExternalSorter<>(context, Option.empty(), Option.empty(), ordering,
                    dep.serializer(), ExternalSorter.$lessinit$greater$default$6());
            result = sorter.insertAllAndUpdateMetrics(aggregated);
        } else {
            result = aggregated;
        }
        if (result instanceof InterruptibleIterator) {
            return result;
        }
        // Another interruptible layer: the aggregator or sorter may have drained the first one.
        return new InterruptibleIterator<>(context, result);
    }
}
