package org.rdmashuffle.benchmarks.cluster;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

import org.rdmashuffle.benchmarks.PeriodicSampler;
import org.rdmashuffle.benchmarks.spark.BalancedPairs;
import org.rdmashuffle.benchmarks.spark.ExecutorResources;
import org.rdmashuffle.benchmarks.spark.ResourceReport;

/**
 * What the NodeManagers hold while one MapReduce job runs, read once a second: each NodeManager JVM's
 * {@code /proc} figures as {@link ExecutorResources#read} reads an executor's (resident memory and its
 * file-backed part, open descriptors, memory mappings, the bytes the storage read for it) and its heap,
 * used and committed, from its HotSpot counters ({@link HotSpotCounters}). A NodeManager lives across
 * runs, so its peak RSS here is the largest {@code VmRSS} sampled during the run, not the kernel's
 * {@code VmHWM} (the peak of its whole life, printed beside it); the storage reads are the run's
 * difference of its counter.
 *
 * <p>Threads: one sampling thread of its own (a daemon), started by {@link #start} and stopped by {@link
 * #finish} (or {@link #close}, on a run that failed), which the runner's thread calls; the figures are kept
 * under this object's lock.
 */
final class NodeManagerResources implements AutoCloseable {
    private static final long PERIOD_MS = 1000;
    private static final double GIB = 1L << 30;
    private static final double MIB = 1L << 20;

    /** One NodeManager's figures over a run, bytes unless named otherwise; heap figures -1 where it kept no counters. */
    record Node(String address, long peakRss, long fileRss, long lifetimePeakRss, long heapUsed, long heapCommitted,
                int descriptors, int mappings, long storageReads) {
    }

    /** What the NodeManagers held during one run, against the bytes the job's reduces shuffled from them. */
    record Report(List<Node> nodes, long shuffleBytes) {
        long storageReads() {
            return nodes.stream().mapToLong(Node::storageReads).sum();
        }

        double pageCacheShare() {
            return ExecutorResources.pageCacheShare(storageReads(), shuffleBytes);
        }

        long largest(java.util.function.ToLongFunction<Node> f) {
            return nodes.stream().mapToLong(f).max().orElse(0);
        }

        /** The run's line, indented as the runner prints a run's details. */
        String line() {
            if (nodes.isEmpty()) {
                return "    resources: no NodeManager sampled";
            }
            return String.format(Locale.ROOT, "    resources: NodeManagers' peak RSS %s GiB (sampled each second; file-backed at most %s; "
                            + "VmHWM since start %s), heap used at most %s MiB of %s committed, fds max %,d, maps max %,d, "
                            + "storage reads %s of %s shuffled (page cache served %s)",
                    each(n -> n.peakRss() / GIB), each(n -> n.fileRss() / GIB), each(n -> n.lifetimePeakRss() / GIB),
                    eachMib(Node::heapUsed), eachMib(Node::heapCommitted), largest(Node::descriptors), largest(Node::mappings),
                    ResourceReport.bytes(storageReads()), ResourceReport.bytes(shuffleBytes), ResourceReport.percent(pageCacheShare()));
        }

        private String each(ToDoubleFunction<Node> f) {
            return String.join("/", nodes.stream().map(n -> String.format(Locale.ROOT, "%.2f", f.applyAsDouble(n))).toList());
        }

        private String eachMib(java.util.function.ToLongFunction<Node> f) {
            return String.join("/", nodes.stream().map(n -> f.applyAsLong(n) < 0 ? "-"
                    : String.format(Locale.ROOT, "%.0f", f.applyAsLong(n) / MIB)).toList());
        }
    }

    /**
     * The medians of each system's runs ({@code bySystem}, in the order the table lists them): one row a
     * system, each figure the median over its runs of the run's largest NodeManager's.
     */
    static String medians(Map<String, List<Report>> bySystem) {
        StringBuilder b = new StringBuilder("| shuffle | NodeManager peak RSS, largest (GiB) | file-backed RSS (GiB) | heap used, "
                + "largest (MiB) | heap committed (MiB) | fds | maps | storage reads | shuffled | page cache served |\n"
                + "|---|---|---|---|---|---|---|---|---|---|\n");
        for (Map.Entry<String, List<Report>> e : bySystem.entrySet()) {
            List<Report> runs = e.getValue();
            b.append(String.format(Locale.ROOT, "| %s | %.2f | %.2f | %.0f | %.0f | %,.0f | %,.0f | %s | %s | %s |%n", e.getKey(),
                    median(runs, r -> r.largest(Node::peakRss) / GIB), median(runs, r -> r.largest(Node::fileRss) / GIB),
                    median(runs, r -> r.largest(Node::heapUsed) / MIB), median(runs, r -> r.largest(Node::heapCommitted) / MIB),
                    median(runs, r -> r.largest(Node::descriptors)), median(runs, r -> r.largest(Node::mappings)),
                    ResourceReport.bytes(Math.round(median(runs, Report::storageReads))),
                    ResourceReport.bytes(Math.round(median(runs, Report::shuffleBytes))),
                    ResourceReport.percent(median(runs, Report::pageCacheShare))));
        }
        return b.toString();
    }

    private static double median(List<Report> runs, ToDoubleFunction<Report> f) {
        return BalancedPairs.median(runs.stream().map(f::applyAsDouble).toList());
    }

    private final Map<String, Tracked> nodes = new LinkedHashMap<>(); // by address; guarded by this
    private PeriodicSampler sampler; // set once by start, before anyone else sees this

    private NodeManagerResources(Map<String, ProcessHandle> nodeManagers) {
        nodeManagers.forEach((address, jvm) -> nodes.put(address, new Tracked(address, jvm.pid())));
    }

    /** Starts sampling {@code nodeManagers} (by address): a first reading now, then one a second. */
    static NodeManagerResources start(Map<String, ProcessHandle> nodeManagers) {
        NodeManagerResources r = new NodeManagerResources(nodeManagers);
        r.sampler = PeriodicSampler.start("nodemanager-resources", PERIOD_MS, r::sampleOnce);
        return r;
    }

    /** Stops sampling, takes a last reading, and returns the run's figures against the bytes it shuffled. */
    Report finish(long shuffleBytes) throws InterruptedException {
        sampler.stop(TimeUnit.SECONDS.toMillis(10));
        sampleOnce();
        synchronized (this) {
            return new Report(nodes.values().stream().map(Tracked::figures).toList(), shuffleBytes);
        }
    }

    /** Stops sampling (the thread ends within a period). */
    @Override
    public void close() {
        sampler.close();
    }

    private void sampleOnce() {
        List<Tracked> all;
        synchronized (this) {
            all = new ArrayList<>(nodes.values());
        }
        for (Tracked t : all) {
            ExecutorResources.Reading r = ExecutorResources.read(t.pid, System.currentTimeMillis());
            HotSpotCounters.Heap heap = HotSpotCounters.heap(t.pid);
            synchronized (this) {
                t.add(r, heap);
            }
        }
    }

    /** What the sampler keeps of one NodeManager; guarded by the sampler's lock. */
    private static final class Tracked {
        final String address;
        final long pid;
        long peakRss;
        long fileRss;
        long lifetimePeakRss;
        long heapUsed = -1;
        long heapCommitted = -1;
        int descriptors;
        int mappings;
        long firstStorageReads = -1;
        long lastStorageReads;

        Tracked(String address, long pid) {
            this.address = address;
            this.pid = pid;
        }

        void add(ExecutorResources.Reading r, HotSpotCounters.Heap heap) {
            if (r != null) {
                peakRss = Math.max(peakRss, r.rss());
                fileRss = Math.max(fileRss, r.fileRss());
                lifetimePeakRss = Math.max(lifetimePeakRss, r.peakRss());
                descriptors = Math.max(descriptors, r.descriptors());
                mappings = Math.max(mappings, r.mappings());
                if (firstStorageReads < 0) {
                    firstStorageReads = r.storageReads();
                }
                lastStorageReads = r.storageReads();
            }
            if (heap != null) {
                heapUsed = Math.max(heapUsed, heap.used());
                heapCommitted = Math.max(heapCommitted, heap.committed());
            }
        }

        Node figures() {
            return new Node(address, peakRss, fileRss, lifetimePeakRss, heapUsed, heapCommitted, descriptors, mappings,
                    firstStorageReads < 0 ? 0 : lastStorageReads - firstStorageReads);
        }
    }
}
