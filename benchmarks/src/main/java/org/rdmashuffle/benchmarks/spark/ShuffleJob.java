package org.rdmashuffle.benchmarks.spark;

import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.executor.ShuffleReadMetrics;
import org.apache.spark.executor.ShuffleWriteMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.rdmashuffle.spark.RdmaShuffleManager;
import scala.Tuple2;

/**
 * The main job: a shuffle-heavy Spark job through this plugin on its embedded default (the software
 * provider), or through Spark's built-in shuffle. {@code rows} rows of (key, 64-character random
 * text) are grouped by key, so every row crosses the shuffle (about 350 MB at the default 5,000,000
 * rows, Kryo-serialized, lz4). With {@code --job sort}, the sort job instead: {@code rows} records of
 * TeraSort's shape (a 10-byte key, a 90-byte value; {@link SortJobRows}) sorted by key into ranges of
 * the key space, one a reducer, and checked in order (3,500,000 rows by default: about 370 MB of shuffle,
 * 106 bytes a row with Kryo's framing).
 *
 * <pre>
 *   ShuffleJob [--job main|sort] [--rows N] [--partitions P | --maps M --reducers R] [--shuffle rdma|builtin|both] [--compare PAIRS]
 *              [--executors E] [--kill-executor-in-reduce] [--release-executors-after-maps]
 *              [--pause-rdma-reduce-until FILE] [--variant spark.KEY=VALUE ...] [--profile]
 * </pre>
 * {@code --partitions P} is {@code --maps P --reducers P} (16 each by default); with M maps and R
 * reducers the shuffle has M x R blocks ({@link JobOptions}).
 * Run as a plain program it uses local-cluster mode (two executor JVMs on 127.0.0.1); submitted with
 * {@code spark-submit} (as {@code bin/shuffle-job --hosts N} does, see {@code cluster.ClusterJob}) it
 * runs on the master and settings it was given, and waits for {@code E} executors before the clock
 * starts. It prints the result (identical either way), the shuffle metrics, and what carried each
 * executor's blocks, with the executor's address, and where the time went stage by stage ({@link
 * StageAccounting}), and what its executors held ({@link ResourceReport}: peak RSS, descriptors, mappings,
 * storage reads against shuffle reads, spills, and the plugin's registered memory). {@code --compare N}
 * runs N balanced pairs ({@link BalancedPairs}): each pair is two rounds, every system once in each, the
 * second round in the first's reverse order; each run starts only once the previous application's executors have exited and the machine has synced ({@link
 * RunSeparation}). It prints every run, then the median of the per-pair ratios with a 90% interval over
 * pairs, of the whole job and of each stage's figures ({@link StageComparison}), and the order effect.
 * {@code --shuffle both} runs each shuffle once, the built-in first: a check that both run and agree, with
 * no ratio. With {@code --variant} (repeatable) each round also runs the plugin with those settings: three runs a
 * round, rotated from pair to pair, each rdma system's ratio to the built-in shuffle of the same pair.
 */
public final class ShuffleJob {
    /** Where {@code --profile} writes: a directory per invocation, one per system under it. */
    private static final java.nio.file.Path PROFILES = java.nio.file.Path.of("benchmarks", "results", "jfr",
            "local-" + java.time.LocalDateTime.now().format(java.time.format.DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    /** What {@code --pause-rdma-reduce-until FILE} prints when the job waits (the file's path follows). */
    public static final String PAUSED = "the rdma run's map stage is done; waiting for ";
    /** What one run produced and measured. */
    record Run(String shuffle, String result, long wallMs, long shuffleWriteBytes, long remoteBytesRead, long localBytesRead,
               long fetchWaitMs, long recordsRead, long remoteBlocks, List<String> carriers, int executorsLost,
               int stagesRetried, long[] taskWaitsMs, List<StageAccounting.Stage> stages, List<StageAccounting.Window> windows,
               List<String> prometheus, RunSeparation separation, ResourceReport resources) {
        /** Each reduce task's fetch wait, largest first: a first-use cost shows as a few large ones. */
        String taskWaits() {
            StringBuilder b = new StringBuilder();
            for (int i = taskWaitsMs.length - 1; i >= 0; i--) {
                b.append(i == taskWaitsMs.length - 1 ? "" : " ").append(taskWaitsMs[i]);
            }
            return b.toString();
        }
    }

    /** Sums the shuffle metrics of every finished task. */
    private static final class Metrics extends SparkListener {
        final AtomicLong written = new AtomicLong();
        final AtomicLong remote = new AtomicLong();
        final AtomicLong local = new AtomicLong();
        final AtomicLong waitMs = new AtomicLong();
        final AtomicLong records = new AtomicLong();
        final AtomicLong remoteBlocks = new AtomicLong();
        final AtomicLong spilledMemory = new AtomicLong();
        final AtomicLong spilledDisk = new AtomicLong();
        final java.util.Queue<Long> taskWaits = new java.util.concurrent.ConcurrentLinkedQueue<>();
        final java.util.concurrent.atomic.AtomicInteger executorsLost = new java.util.concurrent.atomic.AtomicInteger();
        final java.util.concurrent.atomic.AtomicInteger stagesRetried = new java.util.concurrent.atomic.AtomicInteger();
        /** Executors a successful map task ran on: where the map outputs are (no executor lost, none decommissioned). */
        final java.util.Set<String> mapExecutors = java.util.concurrent.ConcurrentHashMap.newKeySet();

        @Override
        public void onExecutorRemoved(org.apache.spark.scheduler.SparkListenerExecutorRemoved e) {
            executorsLost.incrementAndGet();
        }

        @Override
        public void onStageSubmitted(org.apache.spark.scheduler.SparkListenerStageSubmitted e) {
            if (e.stageInfo().attemptNumber() > 0) {
                stagesRetried.incrementAndGet();
            }
        }

        @Override
        public void onTaskEnd(SparkListenerTaskEnd e) {
            if (e.taskMetrics() == null) {
                return;
            }
            if (e.taskType().equals("ShuffleMapTask") && e.taskInfo().successful()) {
                mapExecutors.add(e.taskInfo().executorId());
            }
            ShuffleWriteMetrics w = e.taskMetrics().shuffleWriteMetrics();
            ShuffleReadMetrics r = e.taskMetrics().shuffleReadMetrics();
            written.addAndGet(w.bytesWritten());
            remote.addAndGet(r.remoteBytesRead());
            local.addAndGet(r.localBytesRead());
            waitMs.addAndGet(r.fetchWaitTime());
            records.addAndGet(r.recordsRead());
            remoteBlocks.addAndGet(r.remoteBlocksFetched());
            spilledMemory.addAndGet(e.taskMetrics().memoryBytesSpilled());
            spilledDisk.addAndGet(e.taskMetrics().diskBytesSpilled());
            if (r.totalBlocksFetched() > 0) {
                taskWaits.add(r.fetchWaitTime());
            }
        }
    }

    /**
     * Each system once, at most the default size, before the pairs: printed, counted in no figure. The
     * bed's first application pays for what no later one does (the Workers' JIT, the Spark jars read from
     * disk, each host's fresh file system): on 2026-12-03 the first run of a comparison (the built-in shuffle's, as pair 1 starts) took 28-32% longer
     * than the same system's later runs, and pair 1 always starts with the built-in shuffle.
     */
    private static void warmUp(List<String> systems, String variantName, Map<String, String> variant, JobOptions o) throws Exception {
        JobOptions small = o.withRows(o.warmUpRows());
        String result = null;
        for (String s : BalancedPairs.order(systems, 0)) {
            Run run = runSystem("warm-up " + s, s, variantName, variant, small);
            System.out.printf("warm-up  %-8s %6d ms  %d rows, counted in no figure  result %s%n", s, run.wallMs(), small.rows(), run.result());
            System.out.println(run.separation().await());
            if (result != null && !result.equals(run.result())) {
                throw new IllegalStateException("the warm-up runs' results differ: " + result + " and " + run.result());
            }
            result = run.result();
        }
    }

    /** One run of {@code system} of a comparison: the built-in shuffle, the plugin, or the plugin with the variant's settings. */
    private static Run runSystem(String label, String system, String variantName, Map<String, String> variant, JobOptions o)
            throws Exception {
        return run(label, system.equals("builtin") ? "builtin" : "rdma", system.equals(variantName) ? variant : Map.of(), o);
    }

    public static void main(String[] args) throws Exception {
        JobOptions o = org.rdmashuffle.benchmarks.CommandLine.parseOrExit("ShuffleJob", () -> JobOptions.parse(args));
        int compare = o.compare();
        Map<String, String> variant = o.variant();
        boolean check = o.shuffle().equals("both"); // each once, a check that both run and agree
        if (compare == 0 && !check) {
            print(run(o.shuffle(), o.shuffle(), Map.of(), o));
            return;
        }
        String variantName = variant.isEmpty() ? null : "rdma " + variant.entrySet().stream()
                .map(e -> e.getKey().replaceFirst("^spark\\.shuffle\\.rdma\\.", "") + "=" + e.getValue())
                .collect(java.util.stream.Collectors.joining(","));
        List<String> systems = variantName == null ? List.of("builtin", "rdma") : List.of("builtin", "rdma", variantName);
        List<Run> runs = new ArrayList<>();
        List<Map<String, Double>> walls = new ArrayList<>();
        List<Map<String, Double>> waits = new ArrayList<>();
        List<Map<String, List<StageAccounting.Stage>>> stageRounds = new ArrayList<>();
        int rounds = check ? 1 : 2 * compare; // compare pairs, each two rounds in opposite orders (BalancedPairs)
        if (!check && o.warmUp()) {
            warmUp(systems, variantName, variant, o);
        }
        for (int r = 0; r < rounds; r++) {
            Map<String, Run> round = new java.util.HashMap<>();
            if (r % 2 == 0 && !check) {
                System.out.printf("pair %d of %d: rounds %d and %d, %s then the reverse%n", r / 2 + 1, compare, r + 1, r + 2,
                        String.join(", ", BalancedPairs.order(systems, r)));
            }
            for (String s : BalancedPairs.order(systems, r)) {
                Run run = runSystem(s, s, variantName, variant, o);
                System.out.printf("round %d  %-8s %6d ms  fetch wait %5d ms  %d remote blocks  result %s%s%n", r + 1, s, run.wallMs(),
                        run.fetchWaitMs(), run.remoteBlocks(), run.result(), recovery(run));
                System.out.println("    fetch wait per reduce task, ms, largest first: " + run.taskWaits());
                run.carriers().forEach(c -> System.out.println("    " + c));
                run.prometheus().forEach(c -> System.out.println("    " + c));
                run.resources().lines().forEach(System.out::println);
                run.stages().forEach(st -> System.out.printf("    stage %d %s: %d tasks, %d ms, task run %d ms, CPU %d ms, GC %d ms, "
                        + "fetch wait %d ms, shuffle write %d ms%n", st.id(), st.shortName(), st.tasks(), st.durationMs(), st.runMs(),
                        st.cpuMs(), st.gcMs(), st.fetchWaitMs(), st.shuffleWriteMs()));
                String runName = "round " + (r + 1) + " " + s;
                run.windows().forEach(w -> System.out.println("    " + w.line(runName))); // for ClusterJob --cpu-by-thread
                System.out.println(run.separation().await()); // the next run starts on a quiet machine
                round.put(s, run);
                runs.add(run);
            }
            Map<String, List<StageAccounting.Stage>> roundStages = new java.util.HashMap<>();
            round.forEach((s, run) -> roundStages.put(s, run.stages()));
            stageRounds.add(roundStages);
            Map<String, Double> wall = new java.util.HashMap<>();
            Map<String, Double> wait = new java.util.HashMap<>();
            round.forEach((s, run) -> {
                wall.put(s, (double) run.wallMs());
                wait.put(s, (double) run.fetchWaitMs());
            });
            walls.add(wall);
            waits.add(wait);
        }
        String reference = runs.get(0).result();
        if (runs.stream().anyMatch(x -> !x.result().equals(reference))) {
            throw new IllegalStateException("the results differ between runs: " + runs.stream().map(Run::result).toList());
        }
        if (check) {
            System.out.printf("identical results in both runs: %s (each shuffle once: a check, not a comparison; --compare N measures)%n",
                    reference);
            return;
        }
        System.out.println();
        System.out.println("| shuffle | wall ms (median of " + 2 * compare + ") | shuffle read wait ms (median) |");
        System.out.println("|---|---|---|");
        String provider = runs.stream().filter(x -> x.shuffle().equals("rdma")).findFirst().get().carriers().get(0)
                .replaceAll(".*\\(provider (\\w+), control .*", "$1");
        Map<String, String> names = new java.util.HashMap<>();
        for (String s : systems) {
            names.put(s, s.equals("builtin") ? "built-in" : s.equals("rdma") ? "rdma-shuffle" : s);
        }
        for (String s : systems) {
            long[] wall = runs.stream().filter(x -> x.shuffle().equals(s)).mapToLong(Run::wallMs).sorted().toArray();
            long[] wait = runs.stream().filter(x -> x.shuffle().equals(s)).mapToLong(Run::fetchWaitMs).sorted().toArray();
            String name = s.equals("builtin") ? "built-in" : s.equals("rdma") ? "rdma-shuffle (" + provider + ")"
                    : "rdma-shuffle (" + provider + "), " + s.substring("rdma ".length());
            System.out.println("| " + name + " | " + median(wall) + " | " + median(wait) + " |");
        }
        System.out.printf("identical results in all %d runs: %s%n", runs.size(), reference);
        System.out.println();
        System.out.print(StageComparison.table(stageRounds, systems, "builtin", names));
        System.out.println();
        System.out.println("resources, the median of each shuffle's " + 2 * compare + " runs (docs/benchmarks.md, \"The sort job, "
                + "and what a run's executors hold\"):");
        Map<String, List<ResourceReport>> resources = new java.util.LinkedHashMap<>();
        for (String s : systems) {
            resources.put(names.get(s), runs.stream().filter(x -> x.shuffle().equals(s)).map(Run::resources).toList());
        }
        System.out.print(ResourceReport.medians(resources));
        System.out.println();
        int executorHosts = executorHosts(runs).size();
        String hosts = executorHosts + (executorHosts == 1 ? " host" : " hosts");
        BalancedPairs.Figures wallFigures = new BalancedPairs.Figures(systems, walls);
        BalancedPairs.Figures waitFigures = new BalancedPairs.Figures(systems, waits);
        for (String s : systems.subList(1, systems.size())) {
            String who = s.equals("rdma") ? "rdma" : s;
            System.out.printf("ratio %s/builtin: %s%n", who, BalancedPairs.ratio(wallFigures.pairRatios(s, "builtin")).describe(hosts));
            System.out.println("    each pair: " + wallFigures.pairRatios(s, "builtin").stream()
                    .map(r -> String.format(java.util.Locale.ROOT, "%.2f", r)).collect(java.util.stream.Collectors.joining(", ")));
            System.out.printf("fetch wait ratio %s/builtin: %s%n", who,
                    BalancedPairs.ratio(waitFigures.pairRatios(s, "builtin")).describe(hosts));
        }
        System.out.println("wall " + BalancedPairs.describeOrderEffect(wallFigures.orderEffect(), names));
    }

    /** The distinct addresses executors ran at, from the carriers lines ("executor 1 at 10.0.0.3: ..."). */
    private static java.util.Set<String> executorHosts(List<Run> runs) {
        java.util.Set<String> hosts = new java.util.TreeSet<>();
        java.util.regex.Pattern address = java.util.regex.Pattern.compile("^executor \\S+ at (\\S+):");
        for (Run r : runs) {
            for (String c : r.carriers()) {
                java.util.regex.Matcher m = address.matcher(c);
                if (m.find()) {
                    hosts.add(m.group(1));
                }
            }
        }
        return hosts;
    }

    /** Checks the job's arguments as {@link #main} reads them; a bad one is an IllegalArgumentException naming it. */
    public static void checkArguments(List<String> args) {
        JobOptions.parse(args.toArray(String[]::new));
    }

    private static long median(long[] sorted) {
        return sorted.length % 2 == 1 ? sorted[sorted.length / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
    }

    /**
     * One run of the job, named {@code label} in what it returns, with {@code settings} added to its
     * Spark configuration. With {@code killExecutor}, the executor running the first attempt of reduce
     * partition 0 dies (halts) once that task has started fetching: a host lost mid-shuffle, which
     * Spark must recover from (its outputs are gone: fetch failures, map stage re-run) with the same result.
     * With {@code releaseExecutors} (dynamic allocation, outputs kept by the nodes' shuffle services), the map
     * stage runs alone, every executor is let go once idle, and the reduce stage runs on new executors
     * that read the released ones' outputs from the services: nothing is lost, no map runs again. Its wall
     * time then includes the wait for the release and the new executors' start: a check, not a figure.
     * With {@code pauseUntil}, an RDMA run whose file does not exist yet stops between its map stage and
     * its reduce stage until the file appears (at most 5 minutes): a test does something to the cluster
     * there (kills a node), then lets the reduce stage meet what it did.
     */
    static Run run(String label, String shuffle, Map<String, String> settings, JobOptions o) throws Exception {
        String appName = o.job().equals("sort") ? "rdma-shuffle sort job" : "rdma-shuffle main job";
        SparkConf conf = LocalCluster.submitted() ? LocalCluster.submittedConf(appName, shuffle) : LocalCluster.conf(appName, shuffle);
        settings.forEach(conf::set);
        if (o.prometheus()) {
            PrometheusScrape.settings().forEach(conf::set);
        }
        if (o.profile() && !LocalCluster.submitted()) { // submitted: ClusterJob --profile records the executors
            java.nio.file.Path jfr = java.nio.file.Files.createDirectories(PROFILES.resolve(label.replaceAll("[^A-Za-z0-9=.-]", "_")));
            conf.set("spark.executor.extraJavaOptions", conf.get("spark.executor.extraJavaOptions")
                    + " -XX:StartFlightRecording=settings=profile," + org.rdmashuffle.benchmarks.jfr.CompileTime.EVERY_COMPILATION
                    + ",filename=" + jfr.toAbsolutePath()
                    + "/executor-%t-%p.jfr");
            System.out.println("profiling the " + label + " run's executors with JFR into " + jfr);
        }
        // Every executor sends the plugin's registered-memory gauges here (both shuffles alike): see PluginGauges.
        String driverHost = conf.contains("spark.driver.host") ? conf.get("spark.driver.host") : null;
        try (PluginGauges gauges = driverHost == null ? null : PluginGauges.open(driverHost)) {
            if (gauges != null) {
                gauges.settings().forEach(conf::set);
            }
            return run(label, shuffle, conf, gauges, o);
        }
    }

    private static Run run(String label, String shuffle, SparkConf conf, PluginGauges gauges, JobOptions o) throws Exception {
        int rows = o.rows();
        int maps = o.maps();
        int reducers = o.reducers();
        boolean killExecutor = o.killExecutor();
        boolean releaseExecutors = o.releaseExecutors();
        java.nio.file.Path pauseUntil = o.pauseUntil();
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            Metrics metrics = new Metrics();
            StageAccounting accounting = new StageAccounting();
            sc.sc().addSparkListener(metrics);
            sc.sc().addSparkListener(accounting);
            LocalCluster.awaitExecutors(sc, o.executors(), o.executorWaitSeconds());
            PrometheusScrape scrape = o.prometheus() ? new PrometheusScrape(sc.sc().uiWebUrl().get()) : null;
            sc.parallelize(IntStream.range(0, 4).boxed().toList(), 4).count(); // executors warm before the clock starts
            sc.sc().listenerBus().waitUntilEmpty();
            Job job = o.job().equals("sort") ? sortJob(sc, rows, maps, reducers, killExecutor)
                    : mainJob(sc, rows, maps, reducers, killExecutor);
            long wallMs;
            String result;
            List<ExecutorResources.Executor> sampled;
            try (ExecutorResources resources = ExecutorResources.start(sc.sc().applicationId())) {
                accounting.begin();
                long t0 = System.nanoTime();
                boolean pause = pauseUntil != null && shuffle.equals("rdma") && !java.nio.file.Files.exists(pauseUntil);
                if (releaseExecutors || pause || o.holdAfterMapsSeconds() > 0) {
                    sc.sc().submitMapStage(shuffleOf(job.shuffled())).get(); // the map stage alone
                }
                if (releaseExecutors) {
                    awaitNoExecutors(sc);
                }
                if (o.holdAfterMapsSeconds() > 0) {
                    holdAfterMaps(sc, metrics, o.holdAfterMapsSeconds());
                }
                if (pause) {
                    awaitFile(pauseUntil);
                }
                java.util.function.Supplier<String> collected = job.action().call();
                wallMs = (System.nanoTime() - t0) / 1_000_000;
                result = collected.get();
                sampled = resources.finish();
            }
            sc.sc().listenerBus().waitUntilEmpty(); // the last stage and task events delivered
            accounting.end();
            List<StageAccounting.Stage> stages = accounting.stages();
            List<StageAccounting.Window> windows = accounting.windows();
            long[] taskWaits = metrics.taskWaits.stream().mapToLong(Long::longValue).sorted().toArray();
            long written = metrics.written.get();
            long remote = metrics.remote.get();
            long local = metrics.local.get();
            long waitMs = metrics.waitMs.get();
            long records = metrics.records.get();
            long remoteBlocks = metrics.remoteBlocks.get();
            List<String> carriers = carriers(sc, shuffle); // after the figures: its tasks are not the job's
            List<String> prometheus = scrape == null ? List.of()
                    : scrape.finish(shuffle.equals("rdma"), remoteBlocks, remote, o.executors());
            // The plugin's gauges where it carried the shuffle (Spark's own reports zeros); one more report awaited.
            Map<String, PluginGauges.Executor> registered = !shuffle.equals("rdma") ? null
                    : gauges == null ? Map.of() : gauges.finish(2_500);
            ResourceReport report = ResourceReport.of(sampled, stages, windows, metrics.spilledMemory.get(), metrics.spilledDisk.get(),
                    registered);
            return new Run(label, result, wallMs, written, remote, local, waitMs, records, remoteBlocks, carriers,
                    metrics.executorsLost.get(), metrics.stagesRetried.get(), taskWaits, stages, windows, prometheus,
                    RunSeparation.watch(sc.sc().applicationId()), report);
        }
    }

    /**
     * A job: the RDD whose reduce side reads its shuffle, and its action, which runs the job and returns
     * how to make the result from what it collected (on the driver, after the clock stops).
     */
    private record Job(org.apache.spark.rdd.RDD<?> shuffled, java.util.concurrent.Callable<java.util.function.Supplier<String>> action) {
    }

    /** The main job: {@code rows} rows of (key under 100,000, 64 characters) grouped by key ({@link MainJobRows}). */
    private static Job mainJob(JavaSparkContext sc, int rows, int maps, int reducers, boolean killExecutor) {
        JavaPairRDD<Long, String> data = sc.parallelize(IntStream.range(0, maps).boxed().toList(), maps)
                .flatMapToPair(p -> {
                    MainJobRows made = new MainJobRows(p, rows, maps);
                    return new java.util.Iterator<Tuple2<Long, String>>() {
                        public boolean hasNext() {
                            return made.hasNext();
                        }

                        public Tuple2<Long, String> next() {
                            String value = made.next();
                            return new Tuple2<>(made.key(), value);
                        }
                    };
                });
        JavaPairRDD<Long, Iterable<String>> grouped = data.groupByKey(reducers);
        return new Job(grouped.rdd(), () -> {
            List<Tuple2<Long, long[]>> groups = grouped.mapPartitionsToPair(it -> dieIfChosen(it, killExecutor), true)
                    .mapValues(values -> {
                        long count = 0;
                        long hash = 0;
                        for (String v : values) {
                            count++;
                            hash += v.hashCode();
                        }
                        return new long[] {count, hash};
                    }).collect();
            return () -> {
                java.util.Map<Long, long[]> byKey = new java.util.HashMap<>();
                groups.forEach(g -> byKey.put(g._1(), g._2()));
                return MainJobRows.result(byKey);
            };
        });
    }

    /**
     * The sort job: {@code rows} records of TeraSort's shape ({@link SortJobRows}) sorted by key into
     * {@code reducers} ranges of the key space; each reducer checks its output in order, and the result
     * (rows, checksum, sorted) is made from the checks in partition order. An unsorted output fails the run.
     */
    private static Job sortJob(JavaSparkContext sc, int rows, int maps, int reducers, boolean killExecutor) {
        JavaPairRDD<byte[], byte[]> records = sc.parallelize(IntStream.range(0, maps).boxed().toList(), maps)
                .flatMapToPair(p -> {
                    SortJobRows made = new SortJobRows(p, rows, maps);
                    return new java.util.Iterator<Tuple2<byte[], byte[]>>() {
                        public boolean hasNext() {
                            return made.hasNext();
                        }

                        public Tuple2<byte[], byte[]> next() {
                            byte[] key = made.next();
                            return new Tuple2<>(key, made.value());
                        }
                    };
                });
        JavaPairRDD<byte[], byte[]> sorted = records.repartitionAndSortWithinPartitions(new KeyRanges(reducers), new KeyOrder());
        return new Job(sorted.rdd(), () -> {
            List<SortJobRows.Check> checks = sorted.mapPartitions(it -> {
                java.util.Iterator<Tuple2<byte[], byte[]>> in = dieIfChosen(it, killExecutor);
                SortJobRows.Check check = new SortJobRows.Check();
                while (in.hasNext()) {
                    Tuple2<byte[], byte[]> r = in.next();
                    check.add(r._1(), r._2());
                }
                return List.of(check).iterator();
            }, true).collect();
            return () -> {
                String result = SortJobRows.result(checks);
                if (!SortJobRows.saysSorted(result)) {
                    throw new IllegalStateException("the sort job's output is not sorted: " + result);
                }
                return result;
            };
        });
    }

    /** The sort job's partitioner: equal ranges of the key space ({@link SortJobRows#partition}). */
    static final class KeyRanges extends org.apache.spark.Partitioner {
        private static final long serialVersionUID = 1L;
        private final int partitions;

        KeyRanges(int partitions) {
            this.partitions = partitions;
        }

        @Override
        public int numPartitions() {
            return partitions;
        }

        @Override
        public int getPartition(Object key) {
            return SortJobRows.partition((byte[]) key, partitions);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof KeyRanges k && k.partitions == partitions;
        }

        @Override
        public int hashCode() {
            return partitions;
        }
    }

    /** The sort job's order: keys as unsigned bytes. */
    static final class KeyOrder implements java.util.Comparator<byte[]>, java.io.Serializable {
        private static final long serialVersionUID = 1L;

        @Override
        public int compare(byte[] a, byte[] b) {
            return SortJobRows.compareKeys(a, b);
        }
    }

    /**
     * {@code it}, a reduce task's input; with {@code killExecutor}, the executor running the first attempt of
     * reduce partition 0 halts once the task has started fetching (the input's first {@code hasNext}).
     */
    private static <T> java.util.Iterator<T> dieIfChosen(java.util.Iterator<T> it, boolean killExecutor) {
        org.apache.spark.TaskContext task = org.apache.spark.TaskContext.get();
        if (killExecutor && it.hasNext() && task.partitionId() == 0 && task.stageAttemptNumber() == 0 && task.attemptNumber() == 0) {
            Runtime.getRuntime().halt(137); // the executor dies in the middle of the reduce stage
        }
        return it;
    }

    /** The shuffle {@code rdd} reads (the first one up its lineage). */
    private static org.apache.spark.ShuffleDependency<?, ?, ?> shuffleOf(org.apache.spark.rdd.RDD<?> rdd) {
        for (org.apache.spark.rdd.RDD<?> r = rdd; ; ) {
            org.apache.spark.Dependency<?> d = r.dependencies().head();
            if (d instanceof org.apache.spark.ShuffleDependency<?, ?, ?> shuffle) {
                return shuffle;
            }
            r = d.rdd();
        }
    }

    /** Waits (bounded: 2 minutes) until dynamic allocation has let every executor go. */
    private static void awaitNoExecutors(JavaSparkContext sc) throws InterruptedException {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(2);
        while (!sc.sc().getExecutorIds().isEmpty()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("executors still held 2 minutes after the map stage: "
                        + sc.sc().getExecutorIds() + " (is spark.dynamicAllocation.enabled on?)");
            }
            Thread.sleep(200);
        }
        System.out.println("every executor released after the map stage");
    }

    /** What {@code --hold-after-maps} prints: the executors left after the hold, and where the map outputs are. */
    public static final String HELD = "held after the map stage: ";

    /**
     * Waits {@code seconds} with nothing running after the map stage, then says which executors dynamic
     * allocation left and which hold map outputs: with shuffle tracking and no external shuffle service,
     * the two sets are equal once the idle timeout has passed (an executor holding outputs of a live
     * shuffle is kept, every other one let go).
     */
    private static void holdAfterMaps(JavaSparkContext sc, Metrics metrics, int seconds) throws Exception {
        sc.sc().listenerBus().waitUntilEmpty(); // every map task's end seen
        int before = metrics.executorsLost.get();
        Thread.sleep(seconds * 1000L);
        java.util.Set<String> alive = new java.util.TreeSet<>(scala.jdk.javaapi.CollectionConverters.asJava(sc.sc().getExecutorIds()));
        System.out.println(HELD + seconds + " s; executors alive " + alive
                + "; map outputs on " + new java.util.TreeSet<>(metrics.mapExecutors) + "; released during the hold "
                + (metrics.executorsLost.get() - before));
    }

    /** Says the map stage is done and waits (bounded: 5 minutes) until {@code file} exists. */
    private static void awaitFile(java.nio.file.Path file) throws InterruptedException {
        System.out.println(PAUSED + file);
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(5);
        while (!java.nio.file.Files.exists(file)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("nothing created " + file + " in 5 minutes after the map stage");
            }
            Thread.sleep(200);
        }
    }

    /** What carried each executor's shuffle, asked of the executors themselves, with each one's address. */
    private static List<String> carriers(JavaSparkContext sc, String shuffle) {
        int tasks = 16 * Math.max(2, sc.sc().getExecutorIds().size());
        return sc.parallelize(IntStream.range(0, tasks).boxed().toList(), tasks)
                .map(i -> {
                    org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
                    return "executor " + env.executorId() + " at " + env.blockManager().blockManagerId().host() + ": "
                            + (shuffle.equals("rdma") ? RdmaShuffleManager.describe() : "Spark's built-in shuffle");
                })
                .collect().stream().distinct().sorted().toList(); // no shuffle of its own: it would count itself
    }

    /** What Spark had to recover from in a run, if anything. */
    private static String recovery(Run r) {
        return r.executorsLost() == 0 && r.stagesRetried() == 0 ? ""
                : "  (recovered: " + r.executorsLost() + " executors lost, " + r.stagesRetried() + " stage attempts retried)";
    }

    private static void print(Run r) {
        System.out.println();
        System.out.println("result:  " + r.result());
        System.out.printf("time:    %d ms (%s shuffle)%s%n", r.wallMs(), r.shuffle(), recovery(r));
        System.out.printf("shuffle: %.1f MB written; read %.1f MB remote + %.1f MB local in %d remote blocks; %d records; "
                + "fetch wait %d ms%n", r.shuffleWriteBytes() / 1e6, r.remoteBytesRead() / 1e6, r.localBytesRead() / 1e6,
                r.remoteBlocks(), r.recordsRead(), r.fetchWaitMs());
        System.out.println("carried by:");
        r.carriers().forEach(c -> System.out.println("  " + c));
        r.prometheus().forEach(System.out::println);
        r.resources().lines().forEach(l -> System.out.println(l.strip()));
        System.out.println("where the time went, per stage (sums over each stage's tasks):");
        System.out.print(StageAccounting.table(r.stages()));
        r.windows().forEach(w -> System.out.println(w.line(r.shuffle()))); // for ClusterJob --cpu-by-thread
    }
}
