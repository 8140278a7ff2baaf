package org.rdmashuffle.benchmarks.engine;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.SecurityManager;
import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.network.BlockDataManager;
import org.apache.spark.network.buffer.FileSegmentManagedBuffer;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.client.StreamCallbackWithID;
import org.apache.spark.network.netty.NettyBlockTransferService;
import org.apache.spark.network.shuffle.checksum.Cause;
import org.apache.spark.network.util.MapConfigProvider;
import org.apache.spark.network.util.TransportConf;
import org.apache.spark.serializer.JavaSerializer;
import org.apache.spark.serializer.SerializerManager;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.ShuffleBlockBatchId;
import org.apache.spark.storage.ShuffleBlockId;
import org.apache.spark.storage.StorageLevel;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.config.EngineConfig;

/**
 * The serving JVM of {@link FetchBenchmark}: writes each workload's map outputs once and serves the
 * same file segments two ways, through the engine (registered regions, RDMA_READ) and through
 * Spark's NettyBlockTransferService (FileSegmentManagedBuffer, as Spark's shuffle serves them).
 * Prints {@code READY <engine port> <netty port>}; answers {@code cpu} with its process CPU time.
 */
public final class FetchServer {
    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        // --server-variant=k=v,...: a second engine with those settings serves the same files
        String variant = java.util.Arrays.stream(args).filter(a -> a.startsWith("--server-variant=")).findFirst()
                .map(a -> a.substring("--server-variant=".length())).orElse(null);
        List<FetchWorkload> workloads = java.util.Arrays.stream(args).skip(1).filter(a -> !a.startsWith("--"))
                .map(FetchWorkload::parse).toList();
        Map<Long, File> files = new HashMap<>();
        Map<Long, FetchWorkload> byMap = new HashMap<>();
        RdmaShuffleEngine engine = RdmaShuffleEngine.start(EngineConfig.defaults().set(EngineConfig.KEY_PROVIDER, "software"),
                FetchBenchmark.APP, FetchBenchmark.SECRET);
        RdmaShuffleEngine second = variant == null ? null
                : RdmaShuffleEngine.start(FetchBenchmark.withSettings(EngineConfig.defaults().set(EngineConfig.KEY_PROVIDER,
                        "software"), variant), FetchBenchmark.APP, FetchBenchmark.SECRET);
        long mapBase = 0;
        for (int i = 0; i < workloads.size(); i++) {
            FetchWorkload w = workloads.get(i);
            w.write(dir);
            for (int m = 0; m < w.maps(); m++) {
                engine.registerMapOutput(FetchWorkload.engineShuffle(i), mapBase + m, w.file(dir, m), w.offsets());
                if (second != null) {
                    second.registerMapOutput(FetchWorkload.engineShuffle(i), mapBase + m, w.file(dir, m), w.offsets());
                }
                files.put(mapBase + m, w.file(dir, m).toFile());
                byMap.put(mapBase + m, w);
            }
            mapBase += w.maps();
        }
        TransportConf transportConf = new TransportConf("shuffle", new MapConfigProvider(Map.of()));
        SparkConf conf = FetchBenchmark.sparkConf();
        NettyBlockTransferService netty = FetchBenchmark.nettyService(conf);
        netty.init(new FileSegments(transportConf, files, byMap));
        System.out.println("READY " + engine.address().getPort() + " " + netty.port() + " "
                + (second == null ? 0 : second.address().getPort()));
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        while ((line = in.readLine()) != null) {
            if (line.equals("cpu")) {
                System.out.println("CPU " + os.getProcessCpuTime());
                System.out.flush();
            }
        }
        netty.close();
        engine.close();
        if (second != null) {
            second.close();
        }
    }

    /** Serves shuffle blocks as file segments, as Spark's IndexShuffleBlockResolver does. */
    private record FileSegments(TransportConf conf, Map<Long, File> files, Map<Long, FetchWorkload> workloads)
            implements BlockDataManager {
        @Override
        public ManagedBuffer getLocalBlockData(BlockId id) {
            if (id instanceof ShuffleBlockBatchId b) { // batch fetch: partitions [start, end) as one segment
                FetchWorkload w = workloads.get(b.mapId());
                return new FileSegmentManagedBuffer(conf, files.get(b.mapId()), (long) b.startReduceId() * w.blockBytes(),
                        (long) (b.endReduceId() - b.startReduceId()) * w.blockBytes());
            }
            ShuffleBlockId b = (ShuffleBlockId) id;
            FetchWorkload w = workloads.get(b.mapId());
            return new FileSegmentManagedBuffer(conf, files.get(b.mapId()), (long) b.reduceId() * w.blockBytes(), w.blockBytes());
        }

        @Override
        public Cause diagnoseShuffleBlockCorruption(BlockId blockId, long checksum, String algorithm) {
            return Cause.UNKNOWN_ISSUE;
        }

        @Override
        public String[] getLocalDiskDirs() {
            return new String[0];
        }

        @Override
        public ManagedBuffer getHostLocalShuffleData(BlockId blockId, String[] dirs) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean putBlockData(BlockId blockId, ManagedBuffer data, StorageLevel level, scala.reflect.ClassTag<?> tag) {
            throw new UnsupportedOperationException();
        }

        @Override
        public StreamCallbackWithID putBlockDataAsStream(BlockId blockId, StorageLevel level, scala.reflect.ClassTag<?> tag) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void releaseLock(BlockId blockId, scala.Option<TaskContext> taskContext) {
        }
    }

    static SerializerManager serializers(SparkConf conf) {
        return new SerializerManager(new JavaSerializer(conf), conf);
    }

    static SecurityManager security(SparkConf conf) {
        return new SecurityManager(conf, SecurityManager.$lessinit$greater$default$2(), SecurityManager.$lessinit$greater$default$3());
    }
}
