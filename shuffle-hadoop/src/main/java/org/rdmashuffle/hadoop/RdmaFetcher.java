package org.rdmashuffle.hadoop;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import javax.crypto.SecretKey;

import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.task.reduce.ExceptionReporter;
import org.apache.hadoop.mapreduce.task.reduce.Fetcher;
import org.apache.hadoop.mapreduce.task.reduce.MapHost;
import org.apache.hadoop.mapreduce.task.reduce.MapOutput;
import org.apache.hadoop.mapreduce.task.reduce.MergeManager;
import org.apache.hadoop.mapreduce.task.reduce.ShuffleClientMetrics;
import org.apache.hadoop.mapreduce.task.reduce.ShuffleSchedulerImpl;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.client.BlockFetchException;
import org.rdmashuffle.core.client.BlockFetchListener;
import org.rdmashuffle.core.client.FetchedBlock;

/**
 * A fetcher thread of {@link EngineShuffleConsumer}: takes a host from MapReduce's scheduler,
 * asks that node's service for this reduce's partition of each of the host's map outputs in one
 * engine call, and hands each block, as it arrives, to the merge manager — the stock fetcher's loop
 * with the engine in place of HTTP.
 *
 * <p>Outcomes, as the stock fetcher reports them: a block copied is {@code copySucceeded}; a block
 * the service does not have (output lost) or that fails its IFile checksum is a read error
 * ({@code copyFailed}, which reports the map to the application master); a service that cannot be
 * reached is a connection error, or, with fallback on, the host is fetched over HTTP by the stock
 * code from then on. With fallback on, an output the service has but cannot serve by RDMA (it cannot
 * register the file, say), or a block larger than the reducer's fetch buffers, is fetched over HTTP
 * in the same round. A merge manager that says "wait" gets the rest of the host's maps back.
 */
final class RdmaFetcher<K, V> extends Fetcher<K, V> {
    private static final System.Logger LOG = System.getLogger(RdmaFetcher.class.getName());

    private final RdmaShuffleEngine engine;
    private final int servicePort;
    private final boolean fallback;
    private final Set<String> httpHosts;
    private final long blockWaitMillis;
    /** Where a map output read is counted: over a verbs device (RDMA) or over the software provider. */
    private final RdmaShuffleCounter mapOutputsCounter;
    private final RdmaShuffleCounter bytesCounter;

    private record Failure(BlockId block, Throwable cause) {
    }

    RdmaFetcher(JobConf job, TaskAttemptID reduceId, ShuffleSchedulerImpl<K, V> scheduler, MergeManager<K, V> merger,
                Reporter reporter, ShuffleClientMetrics metrics, ExceptionReporter exceptionReporter, SecretKey shuffleKey,
                RdmaShuffleEngine engine, int servicePort, boolean fallback, Set<String> httpHosts) {
        super(job, reduceId, scheduler, merger, reporter, metrics, exceptionReporter, shuffleKey);
        setName("rdma-shuffle-fetcher#" + id);
        setDaemon(true);
        this.engine = engine;
        this.servicePort = servicePort;
        this.fallback = fallback;
        this.httpHosts = httpHosts;
        this.mapOutputsCounter = RdmaShuffleCounter.mapOutputsOver(engine.providerName());
        this.bytesCounter = RdmaShuffleCounter.bytesOver(engine.providerName());
        // The engine answers every block within its fetch timeout; a little more guards against a lost callback.
        this.blockWaitMillis = engine.config().fetchTimeout().toMillis() + engine.config().connectTimeout().toMillis() * 2;
    }

    @Override
    protected void copyFromHost(MapHost host) throws IOException {
        if (httpHosts.contains(host.getHostName())) {
            super.copyFromHost(host);
            return;
        }
        List<TaskAttemptID> maps = scheduler.getMapsForHost(host);
        if (maps.isEmpty()) {
            return;
        }
        InetSocketAddress service = new InetSocketAddress(hostOnly(host.getHostName()), servicePort);
        Map<BlockId, TaskAttemptID> mapOf = new HashMap<>();
        List<BlockId> blocks = new ArrayList<>(maps.size());
        for (TaskAttemptID m : maps) {
            BlockId b = BlockId.of(MapReduceIds.SHUFFLE, MapReduceIds.mapId(m), reduce);
            mapOf.put(b, m);
            blocks.add(b);
        }
        // Maps not copied go back to the scheduler at the end (failed ones too, as the stock fetcher
        // does: copyFailed penalizes the host, and the map is tried again unless it becomes obsolete).
        Set<TaskAttemptID> remaining = new LinkedHashSet<>(maps);
        List<TaskAttemptID> overHttp = new ArrayList<>();
        Throwable unreachable = null;
        boolean mergerWaits = false;
        BlockingQueue<Object> arrivals = fetch(service, blocks);
        for (int i = 0; i < blocks.size(); i++) {
            Object arrival = next(arrivals, service, blocks.size() - i);
            if (arrival instanceof FetchedBlock block) {
                try {
                    TaskAttemptID m = mapOf.get(block.id());
                    if (mergerWaits) {
                        continue; // the merge manager is full: the rest go back to the scheduler
                    }
                    if (copy(host, m, block)) {
                        remaining.remove(m);
                    } else {
                        mergerWaits = true;
                    }
                } finally {
                    block.release();
                }
                continue;
            }
            Failure f = (Failure) arrival;
            TaskAttemptID m = mapOf.get(f.block());
            String why = f.cause().getMessage() == null ? f.cause().toString() : f.cause().getMessage();
            switch (BlockFetchException.kindOf(f.cause())) {
                case UNREACHABLE, NOT_AUTHENTICATED -> unreachable = f.cause();
                case REFUSED -> {
                    if (fallback) {
                        // The service has the output but will not serve it by RDMA (cannot register the
                        // file, say): HTTP can. The stock fetcher gets this map alone, below.
                        LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: " + m + " from " + service + ": " + why
                                + "; fetching it over HTTP");
                        remaining.remove(m);
                        overHttp.add(m);
                    } else {
                        failed(host, m, service, why);
                    }
                }
                case NO_SUCH_OUTPUT, FAILED -> failed(host, m, service, why);
            }
        }
        if (!overHttp.isEmpty()) {
            fetchOverHttp(host, overHttp);
        }
        if (unreachable != null) {
            if (fallback) {
                if (httpHosts.add(host.getHostName())) {
                    LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: the service on " + service + " cannot be reached ("
                            + unreachable.getMessage() + "); fetching from " + host.getHostName() + " over HTTP");
                }
                for (TaskAttemptID m : remaining) {
                    scheduler.putBackKnownMapOutput(host, m);
                }
                super.copyFromHost(host);
                return;
            }
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: the service on " + service + " cannot be reached: "
                    + unreachable.getMessage() + " (" + HadoopSettings.MAPREDUCE_FALLBACK + "=false)");
            for (TaskAttemptID m : remaining) {
                metrics.failedFetch();
                scheduler.copyFailed(m, host, false, true);
            }
        }
        for (TaskAttemptID m : remaining) {
            scheduler.putBackKnownMapOutput(host, m);
        }
    }

    /** A read error for map {@code m}, reported as the stock fetcher does: the scheduler may have it re-run. */
    private void failed(MapHost host, TaskAttemptID m, InetSocketAddress service, String why) {
        LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: " + m + " from " + service + " failed: " + why);
        metrics.failedFetch();
        scheduler.copyFailed(m, host, true, false);
    }

    /** Starts fetching {@code blocks}; their outcomes (a FetchedBlock or a Failure each) arrive in the queue. */
    private BlockingQueue<Object> fetch(InetSocketAddress service, List<BlockId> blocks) {
        BlockingQueue<Object> arrivals = new LinkedBlockingQueue<>();
        engine.fetchBlocks(service, blocks, new BlockFetchListener() {
            @Override
            public void onBlockFetched(FetchedBlock block) {
                arrivals.add(block);
            }

            @Override
            public void onBlockFetchFailure(BlockId block, Throwable cause) {
                arrivals.add(new Failure(block, cause));
            }
        });
        return arrivals;
    }

    private Object next(BlockingQueue<Object> arrivals, InetSocketAddress service, int owed) throws IOException {
        Object arrival;
        try {
            arrival = arrivals.poll(blockWaitMillis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while fetching from " + service, e);
        }
        if (arrival == null) {
            throw new IOException("rdma-shuffle: " + owed + " blocks from " + service + " got no answer within "
                    + blockWaitMillis + " ms");
        }
        return arrival;
    }

    /**
     * Fetches just {@code maps} of {@code host} with the stock code: it takes its maps from the host
     * object it is given, so it gets one holding these alone; whatever it hands back (not fetched)
     * returns to the real host.
     */
    private void fetchOverHttp(MapHost host, List<TaskAttemptID> maps) throws IOException {
        MapHost only = new MapHost(host.getHostName(), host.getBaseUrl());
        maps.forEach(only::addKnownMap);
        try {
            super.copyFromHost(only);
        } finally {
            for (TaskAttemptID m : only.getAndClearKnownMaps()) {
                scheduler.putBackKnownMapOutput(host, m);
            }
        }
    }

    /** Copies one block into the merge manager; false if it says wait (nothing was taken). */
    private boolean copy(MapHost host, TaskAttemptID map, FetchedBlock block) throws IOException {
        long stored = block.size();
        long raw = block.rawLength();
        MapOutput<K, V> out = merger.reserve(map, raw, id);
        if (out == null) {
            return false;
        }
        long start = System.currentTimeMillis();
        try {
            // Checks the IFile checksum and decompresses, as for a block read over HTTP.
            out.shuffle(host, block.openStream(), stored, raw, metrics, reporter);
        } catch (IOException | RuntimeException e) {
            out.abort();
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: " + map + " from " + host.getHostName()
                    + " is corrupt or unreadable: " + e);
            metrics.failedFetch();
            scheduler.copyFailed(map, host, true, false);
            return true;
        }
        scheduler.copySucceeded(map, host, stored, start, System.currentTimeMillis(), out);
        metrics.successFetch();
        reporter.incrCounter(mapOutputsCounter, 1);
        reporter.incrCounter(bytesCounter, stored);
        return true;
    }

    private static String hostOnly(String hostAndPort) {
        int colon = hostAndPort.lastIndexOf(':');
        return colon < 0 ? hostAndPort : hostAndPort.substring(0, colon);
    }
}
