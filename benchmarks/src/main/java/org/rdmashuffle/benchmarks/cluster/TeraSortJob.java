package org.rdmashuffle.benchmarks.cluster;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.rdmashuffle.benchmarks.CommandLine;
import org.rdmashuffle.benchmarks.spark.BalancedPairs;
import org.rdmashuffle.benchmarks.spark.ResourceReport;
import org.rdmashuffle.benchmarks.spark.RunSeparation;

/**
 * {@code bin/terasort-job}: Hadoop's own TeraSort at a chosen size on the YARN bed ({@link YarnCluster}:
 * a ResourceManager with the JobHistoryServer, the job client's host, and N NodeManagers, each in a host
 * of its own), shuffled by the NodeManagers' rdma-shuffle service (the RDMA consumer, as the shipped
 * conf/mapred-site.xml sets it) against MapReduce's stock shuffle (its HTTP {@code Shuffle} consumer and
 * the NodeManagers' {@code mapreduce_shuffle} handler), in balanced pairs ({@link BalancedPairs}).
 *
 * <pre>
 *   TeraSortJob [--rows N] [--maps M] [--reduces R] [--nodes N] [--compare PAIRS] [--no-warm-up] [--node-mb MB]
 *               [--run-dir DIR] [--keep-data]
 * </pre>
 * The bed and the cluster start once, TeraGen writes the input once (M maps, N rows of 100 bytes), then
 * each system runs once at most {@link #DEFAULT_ROWS} rows as a warm-up counted in no figure, then the
 * pairs: each pair two rounds, both systems in each, the second round in the reverse order. Every run is
 * TeraSort with R reduces that start once every map is done ({@code slowstart.completedmaps=1.0}, so the
 * map and reduce phases are apart and a reduce never holds a container a map waits for); its output is
 * checked by TeraValidate (sorted, and its checksum, which every run of the same input must share: the two
 * shuffles are compared by it, not by reading the outputs), then deleted; the job's counters must say
 * that every shuffled map output and byte came over the engine (rdma runs) or none did (stock runs). The
 * next run starts once the last application's containers have exited and {@code sync} ran ({@link
 * RunSeparation}). Each run prints its wall time (the job client's, submission to completion), the job's
 * phases ({@link JobPhases}), its counters, and what the NodeManagers held ({@link NodeManagerResources});
 * then the medians, the ratios of the pairs with a 90% interval and the order effect. The input is deleted
 * at the end unless {@code --keep-data}.
 */
public final class TeraSortJob {
    /** Rows TeraGen writes unless told (100 bytes each: 0.2 GB), and the most a warm-up sorts. */
    static final int DEFAULT_ROWS = 2_000_000;
    static final int DEFAULT_MAPS = 4;
    static final int DEFAULT_NODES = 2;
    static final int MAX_NODES = 8;
    /** Each NodeManager's memory unless told: the bed's ({@link YarnCluster#NODE_MB}), room for a reduce or two maps. */
    static final int DEFAULT_NODE_MB = YarnCluster.NODE_MB;
    static final int MAX_NODE_MB = 65_536;
    private static final long JOB_MINUTES = 240;
    private static final List<String> SYSTEMS = List.of("stock", "rdma");
    private static final Map<String, String> NAMES = Map.of("stock", "stock shuffle (HTTP)", "rdma", "rdma-shuffle");
    /**
     * TeraSort's maps, whose times are figures, run on the JVM's defaults (C2, its own choice of collector)
     * with the bed's 512 MB heap, not its C1-only serial JVMs ({@link YarnCluster#JVM_OPTIONS}, which the
     * daemons, the application masters, TeraGen and TeraValidate keep); the reduces run as the shipped
     * conf/mapred-site.xml sets them (-Xmx1024m, the JVM's defaults otherwise), both shuffles alike.
     */
    static final List<String> TASK_JVMS = List.of("-Dmapreduce.map.java.opts=-Xmx512m");
    private static final String STOCK_CONSUMER = "org.apache.hadoop.mapreduce.task.reduce.Shuffle";
    /** Bytes of disk a run needs per byte of input: the input, the sorted output, the map outputs, the reduces' merges. */
    private static final double DISK_PER_INPUT_BYTE = 4.5;

    private TeraSortJob() {
    }

    /** Its command line. {@code reduces} 0: one a node. */
    record Options(int rows, int maps, int reduces, int nodes, int compare, boolean warmUp, int nodeMb, Path runDir,
                   boolean keepData) {
        /** Parses and checks the whole command line; a bad argument is an IllegalArgumentException naming it. */
        static Options parse(String... args) {
            int rows = DEFAULT_ROWS;
            int maps = DEFAULT_MAPS;
            Integer reduces = null;
            int nodes = DEFAULT_NODES;
            int compare = 1;
            boolean warmUp = true;
            int nodeMb = DEFAULT_NODE_MB;
            Path runDir = null;
            boolean keepData = false;
            for (int i = 0; i < args.length; i++) {
                String option = args[i];
                switch (option) {
                    case "--rows" -> rows = CommandLine.atLeast(option, CommandLine.value(args, ++i, option), 1);
                    case "--maps" -> maps = CommandLine.atLeast(option, CommandLine.value(args, ++i, option), 1);
                    case "--reduces" -> reduces = CommandLine.atLeast(option, CommandLine.value(args, ++i, option), 1);
                    case "--nodes" -> nodes = CommandLine.wholeNumber(option, CommandLine.value(args, ++i, option), 2, MAX_NODES);
                    case "--compare" -> compare = CommandLine.atLeast(option, CommandLine.value(args, ++i, option), 1);
                    case "--no-warm-up" -> warmUp = false;
                    case "--node-mb" -> nodeMb = CommandLine.wholeNumber(option, CommandLine.value(args, ++i, option),
                            DEFAULT_NODE_MB, MAX_NODE_MB);
                    case "--run-dir" -> runDir = Path.of(CommandLine.value(args, ++i, option));
                    case "--keep-data" -> keepData = true;
                    default -> throw new IllegalArgumentException("unknown argument '" + option + "'");
                }
            }
            if (rows < maps) {
                throw new IllegalArgumentException("--rows " + rows + " is fewer than the " + maps + " maps (--maps): every map writes rows");
            }
            return new Options(rows, maps, reduces == null ? nodes : reduces, nodes, compare, warmUp, nodeMb, runDir, keepData);
        }

        long inputBytes() {
            return rows * 100L;
        }
    }

    /** One TeraSort run: what it measured, and what stands between it and the next. */
    record Run(String system, String appId, long wallMs, long validateMs, String checksum, Map<String, Long> counters, JobPhases phases,
               NodeManagerResources.Report resources, RunSeparation separation) {
        long counter(String name) {
            return counters.getOrDefault(name, 0L);
        }

        long shuffledMaps() {
            return counter("Shuffled Maps");
        }

        long shuffleBytes() {
            return counter("Reduce shuffle bytes");
        }

        long engineMaps() {
            return counter("MAP_OUTPUTS_OVER_SOFTWARE_PROVIDER") + counter("MAP_OUTPUTS_OVER_RDMA");
        }

        long engineBytes() {
            return counter("BYTES_OVER_SOFTWARE_PROVIDER") + counter("BYTES_OVER_RDMA");
        }

        /** The figures a comparison is made of, by name: what {@link #compare} reports ratios of. */
        Map<String, Double> figures() {
            Map<String, Double> f = new LinkedHashMap<>();
            f.put("wall", (double) wallMs);
            f.put("job elapsed", (double) phases.elapsedMs());
            f.put("map phase", (double) phases.mapPhaseMs());
            f.put("reduce phase", (double) phases.reducePhaseMs());
            f.put("shuffle (avg per reduce)", (double) phases.avgShuffleMs());
            f.put("task CPU", (double) counter("CPU time spent (ms)"));
            f.put("task GC", (double) counter("GC time elapsed (ms)"));
            return f;
        }
    }

    public static void main(String[] args) throws Exception {
        Options o = CommandLine.parseOrExit("TeraSortJob", () -> Options.parse(args));
        String cannot = ClusterBed.unavailabilityCause();
        if (cannot != null) {
            System.err.println("bin/terasort-job makes hosts as network namespaces, and cannot here: " + cannot
                    + ". Run it as root (sudo bin/terasort-job ...).");
            System.exit(ClusterBed.CANNOT);
        }
        Path runDir = (o.runDir() != null ? o.runDir() : Repository.root().resolve("benchmarks/target/terasort-runs")
                .resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")))).toAbsolutePath();
        Files.createDirectories(runDir);
        long start = System.nanoTime();
        int exit = 0;
        String prefix = null;
        try {
            HadoopHome home = HadoopHome.create(runDir.resolve("hadoop-home"), Repository.hadoopJars(), Repository.yarnJar());
            try (ClusterBed bed = ClusterBed.start(o.nodes() + 2, null)) {
                prefix = bed.namespacePrefix();
                try (YarnCluster yarn = YarnCluster.start(bed, home, runDir,
                        Map.of("yarn.nodemanager.resource.memory-mb", Integer.toString(o.nodeMb())))) {
                    System.out.printf("the bed and the YARN cluster up in %.0f s; run directory %s%n",
                            (System.nanoTime() - start) / 1e9, runDir);
                    new Comparison(yarn, runDir, o, System.out).run();
                }
            }
        } catch (ClusterBed.Unavailable e) {
            System.err.println(e.getMessage());
            System.exit(ClusterBed.CANNOT);
        } catch (Exception e) {
            System.out.println("the comparison failed: " + e);
            if (!(e instanceof IllegalStateException)) {
                e.printStackTrace(System.out); // not one of the runner's own verdicts: where it came from
            }
            System.out.println("its run directory (daemons' and jobs' logs under logs/): " + runDir);
            exit = 1;
        }
        List<String> namespaces = prefix == null ? List.of() : ClusterRun.namespacesLeft(prefix);
        List<String> processes = ClusterRun.processesLeft(runDir);
        System.out.printf("cluster torn down: %d namespaces and %d processes left behind; %.0f s in all (the bed, the cluster, "
                + "TeraGen, the warm-up, the pairs, the teardown)%n", namespaces.size(), processes.size(), (System.nanoTime() - start) / 1e9);
        namespaces.forEach(n -> System.out.println("  left: namespace " + n));
        processes.forEach(p -> System.out.println("  left: process " + p));
        System.exit(exit != 0 ? exit : namespaces.isEmpty() && processes.isEmpty() ? 0 : 1);
    }

    /** One invocation's work on a started cluster: the input, the warm-up, the pairs, the summary. */
    private static final class Comparison {
        private final YarnCluster yarn;
        private final Options o;
        private final PrintStream out;
        private final Path data;
        private int jobs;

        Comparison(YarnCluster yarn, Path runDir, Options o, PrintStream out) {
            this.yarn = yarn;
            this.o = o;
            this.out = out;
            this.data = runDir.resolve("data");
        }

        void run() throws Exception {
            out.printf("TeraSort on the YARN bed: %,d rows (%s), TeraGen's %d maps, %d reduces, %d NodeManagers of %d MB, "
                            + "%d balanced %s%s%n", o.rows(), ResourceReport.bytes(o.inputBytes()), o.maps(), o.reduces(), o.nodes(),
                    o.nodeMb(), o.compare(), o.compare() == 1 ? "pair" : "pairs", o.warmUp() ? " after a warm-up of each" : "");
            for (ClusterBed.Host node : yarn.nodeHosts()) {
                out.println("  NodeManager " + node.address() + ": " + serviceLine(node));
            }
            Files.createDirectories(data);
            checkDisk(o.inputBytes());
            try {
                Path in = data.resolve("in");
                teraGen(o.rows(), in);
                if (o.warmUp()) {
                    Path warmIn = in;
                    int warmRows = Math.min(o.rows(), DEFAULT_ROWS);
                    if (warmRows < o.rows()) {
                        warmIn = data.resolve("in-warm-up");
                        teraGen(warmRows, warmIn);
                    }
                    String checksum = null;
                    for (String s : BalancedPairs.order(SYSTEMS, 0)) {
                        Run run = teraSort(s, warmIn);
                        out.printf("warm-up  %-5s %7d ms  %,d rows, counted in no figure  checksum %s%n", s, run.wallMs(), warmRows,
                                run.checksum());
                        out.println(run.separation().await());
                        if (checksum != null && !checksum.equals(run.checksum())) {
                            throw new IllegalStateException("the warm-up runs' checksums differ: " + checksum + " and " + run.checksum());
                        }
                        checksum = run.checksum();
                    }
                    if (warmIn != in) {
                        delete(warmIn);
                    }
                }
                compare(in);
            } finally {
                if (!o.keepData()) {
                    delete(data);
                    out.println("data deleted: " + data);
                } else {
                    out.println("data kept (--keep-data): " + data);
                }
            }
        }

        /** The NodeManager's line saying how its rdma-shuffle service serves (or that it does not). */
        private String serviceLine(ClusterBed.Host node) throws IOException {
            String log = Files.readString(yarn.logs().resolve("nodemanager-" + node.address() + ".log"));
            return log.lines().filter(l -> l.contains("rdma-shuffle service")).map(l -> l.replaceFirst("^.*?(rdma-shuffle service)", "$1"))
                    .findFirst().orElse("no rdma-shuffle service line in its log: " + yarn.logs());
        }

        /** Refuses to start when the data's file system cannot hold what the runs write. */
        private void checkDisk(long inputBytes) throws IOException {
            long usable = Files.getFileStore(data).getUsableSpace();
            long needed = (long) (inputBytes * DISK_PER_INPUT_BYTE);
            out.printf("disk: %s free where the data goes (%s), about %s needed at once (input, output, map outputs, merges)%n",
                    ResourceReport.bytes(usable), data, ResourceReport.bytes(needed));
            if (usable < needed) {
                throw new IllegalStateException("not enough disk for " + ResourceReport.bytes(inputBytes) + " of input: "
                        + ResourceReport.bytes(usable) + " free at " + data + ", about " + ResourceReport.bytes(needed) + " needed");
            }
        }

        private void teraGen(int rows, Path in) throws IOException, InterruptedException {
            long t0 = System.nanoTime();
            String log = job("teragen-" + in.getFileName(),
                    List.of("teragen", "-Dmapreduce.job.maps=" + o.maps(), Integer.toString(rows), in.toString()));
            RunSeparation.ofProcesses(application(log), "container processes", yarn.containerProcesses(application(log))).await();
            out.printf("teragen: %,d rows (%s) in %s by %d maps, %d ms%n", rows, ResourceReport.bytes(rows * 100L), in, o.maps(),
                    (System.nanoTime() - t0) / 1_000_000);
        }

        /**
         * One TeraSort of {@code in} with {@code system}'s shuffle, sampled, validated, its output deleted;
         * the containers of its job and of its validation are what the next run waits for.
         */
        private Run teraSort(String system, Path in) throws Exception {
            int n = ++jobs;
            Path sorted = data.resolve("out-" + n);
            Path report = data.resolve("validate-" + n);
            List<String> args = new ArrayList<>(List.of("terasort", "-Dmapreduce.job.reduces=" + o.reduces(),
                    "-Dmapreduce.job.reduce.slowstart.completedmaps=1.0"));
            args.addAll(TASK_JVMS);
            if (system.equals("stock")) {
                args.add("-Dmapreduce.job.reduce.shuffle.consumer.plugin.class=" + STOCK_CONSUMER);
            }
            args.addAll(List.of(in.toString(), sorted.toString()));
            Map<String, ProcessHandle> nodeManagers = new LinkedHashMap<>();
            for (ClusterBed.Host node : yarn.nodeHosts()) {
                nodeManagers.put(node.address(), yarn.nodeManagerJvm(node));
            }
            String log;
            long wallMs;
            NodeManagerResources.Report resources;
            try (NodeManagerResources sampler = NodeManagerResources.start(nodeManagers)) {
                long t0 = System.nanoTime();
                log = job("terasort-" + n + "-" + system, args);
                wallMs = (System.nanoTime() - t0) / 1_000_000;
                resources = sampler.finish(counters(log).getOrDefault("Reduce shuffle bytes", 0L));
            }
            Map<String, Long> counters = counters(log);
            String app = application(log);
            JobPhases phases = JobPhases.of(yarn, jobId(log));
            long v0 = System.nanoTime();
            String validation = job("teravalidate-" + n, List.of("teravalidate", sorted.toString(), report.toString()));
            long validateMs = (System.nanoTime() - v0) / 1_000_000;
            String checksum = checksum(report);
            Run run = new Run(system, app, wallMs, validateMs, checksum, counters, phases, resources, null);
            checkCounters(run);
            delete(sorted);
            delete(report);
            List<ProcessHandle> containers = new ArrayList<>(yarn.containerProcesses(app));
            containers.addAll(yarn.containerProcesses(application(validation)));
            return new Run(system, app, wallMs, validateMs, checksum, counters, phases, resources,
                    RunSeparation.ofProcesses(app + " and its validation", "container processes", containers));
        }

        /** The rdma runs shuffled every map output and byte over the engine; the stock runs none. */
        private void checkCounters(Run run) {
            if (run.shuffledMaps() <= 0 || run.shuffleBytes() <= 0) {
                throw new IllegalStateException(run.appId() + " shuffled nothing: " + run.counters());
            }
            if (run.system().equals("rdma") && (run.engineMaps() != run.shuffledMaps() || run.engineBytes() != run.shuffleBytes())) {
                throw new IllegalStateException(String.format(Locale.ROOT, "%s (rdma) shuffled %d map outputs and %d bytes but %d and %d "
                        + "came over the engine: %s", run.appId(), run.shuffledMaps(), run.shuffleBytes(), run.engineMaps(),
                        run.engineBytes(), run.counters()));
            }
            if (run.system().equals("stock") && (run.engineMaps() != 0 || run.engineBytes() != 0)) {
                throw new IllegalStateException(run.appId() + " (stock) counted map outputs over the engine: " + run.counters());
            }
        }

        private void compare(Path in) throws Exception {
            List<Run> runs = new ArrayList<>();
            List<Map<String, Map<String, Double>>> rounds = new ArrayList<>(); // round -> system -> figure -> value
            for (int r = 0; r < 2 * o.compare(); r++) {
                if (r % 2 == 0) {
                    out.printf("pair %d of %d: rounds %d and %d, %s then the reverse%n", r / 2 + 1, o.compare(), r + 1, r + 2,
                            String.join(", ", BalancedPairs.order(SYSTEMS, r)));
                }
                Map<String, Map<String, Double>> round = new HashMap<>();
                for (String s : BalancedPairs.order(SYSTEMS, r)) {
                    Run run = teraSort(s, in);
                    print(r + 1, run);
                    out.println(run.separation().await()); // the next run starts on a quiet machine
                    round.put(s, run.figures());
                    runs.add(run);
                }
                rounds.add(round);
            }
            String reference = runs.get(0).checksum();
            if (runs.stream().anyMatch(x -> !x.checksum().equals(reference))) {
                throw new IllegalStateException("TeraValidate's checksums differ between runs: "
                        + runs.stream().map(x -> x.system() + " " + x.checksum()).toList());
            }
            summary(runs, rounds, reference);
        }

        private void print(int round, Run run) {
            JobPhases p = run.phases();
            out.printf("round %d  %-5s %7d ms  job %d ms: map phase %d ms, reduce phase %d ms (per reduce: shuffle %d ms, merge %d ms, "
                            + "reduce %d ms)  checksum %s, sorted (TeraValidate %d ms)%n", round, run.system(), run.wallMs(), p.elapsedMs(),
                    p.mapPhaseMs(), p.reducePhaseMs(), p.avgShuffleMs(), p.avgMergeMs(), p.avgReduceMs(), run.checksum(), run.validateMs());
            out.printf("    counters: %d maps, %d reduces, shuffled %d map outputs, %s; over the engine %d, %s; task CPU %d ms, GC %d ms, "
                            + "spilled records %,d%n", run.counter("Launched map tasks"), run.counter("Launched reduce tasks"),
                    run.shuffledMaps(), ResourceReport.bytes(run.shuffleBytes()), run.engineMaps(), ResourceReport.bytes(run.engineBytes()),
                    run.counter("CPU time spent (ms)"), run.counter("GC time elapsed (ms)"), run.counter("Spilled Records"));
            out.println(run.resources().line());
        }

        private void summary(List<Run> runs, List<Map<String, Map<String, Double>>> rounds, String checksum) {
            int count = 2 * o.compare();
            out.println();
            out.println("| shuffle | wall ms (median of " + count + ") | job elapsed ms | map phase ms | reduce phase ms "
                    + "| shuffle ms, avg per reduce | task CPU ms | task GC ms |");
            out.println("|---|---|---|---|---|---|---|---|");
            for (String s : SYSTEMS) {
                List<Run> of = runs.stream().filter(x -> x.system().equals(s)).toList();
                out.printf("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |%n", NAMES.get(s), median(of, r -> r.wallMs()),
                        median(of, r -> r.phases().elapsedMs()), median(of, r -> r.phases().mapPhaseMs()),
                        median(of, r -> r.phases().reducePhaseMs()), median(of, r -> r.phases().avgShuffleMs()),
                        median(of, r -> r.counter("CPU time spent (ms)")), median(of, r -> r.counter("GC time elapsed (ms)")));
            }
            out.printf("TeraValidate: every output sorted, the same checksum in all %d runs: %s%n", runs.size(), checksum);
            out.println();
            out.println("NodeManagers' resources, the median of each shuffle's " + count + " runs:");
            Map<String, List<NodeManagerResources.Report>> resources = new LinkedHashMap<>();
            for (String s : SYSTEMS) {
                resources.put(NAMES.get(s), runs.stream().filter(x -> x.system().equals(s)).map(Run::resources).toList());
            }
            out.print(NodeManagerResources.medians(resources));
            out.println();
            String where = o.nodes() + " NodeManager hosts";
            Map<String, BalancedPairs.Figures> byFigure = new LinkedHashMap<>();
            for (String figure : runs.get(0).figures().keySet()) {
                List<Map<String, Double>> values = rounds.stream().map(round -> round.entrySet().stream()
                        .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().get(figure)))).toList();
                byFigure.put(figure, new BalancedPairs.Figures(SYSTEMS, values));
            }
            byFigure.forEach((figure, f) -> {
                List<Double> ratios = f.pairRatios("rdma", "stock");
                out.printf("ratio rdma/stock, %s: %s%n", figure, BalancedPairs.ratio(ratios).describe(where));
                if (figure.equals("wall")) {
                    out.println("    each pair: " + ratios.stream().map(r -> String.format(Locale.ROOT, "%.2f", r))
                            .collect(Collectors.joining(", ")));
                }
            });
            out.println("wall " + BalancedPairs.describeOrderEffect(byFigure.get("wall").orderEffect(), NAMES));
        }

        private static double median(List<Run> runs, ToDoubleFunction<Run> f) {
            return BalancedPairs.median(runs.stream().map(f::applyAsDouble).toList());
        }

        /** Runs an example program to its end and returns its log; fails, naming the log, unless it succeeded. */
        private String job(String logName, List<String> programAndArgs) throws IOException, InterruptedException {
            int status = yarn.runExample(logName + ".log", JOB_MINUTES, programAndArgs);
            Path logFile = yarn.logs().resolve(logName + ".log");
            String log = Files.readString(logFile);
            if (status != 0 || !log.contains("completed successfully")) {
                throw new IllegalStateException(logName + " failed (exit status " + status + "); its log: " + logFile);
            }
            return log;
        }
    }

    private static final Pattern COUNTER = Pattern.compile("(?m)^\\s+([A-Za-z][^=\\n]*?)=(\\d+)\\s*$");

    /** The counters a job client printed at its end ("\t\tShuffled Maps =8"), by name; the first of a name wins. */
    static Map<String, Long> counters(String log) {
        Map<String, Long> counters = new LinkedHashMap<>();
        Matcher m = COUNTER.matcher(log);
        while (m.find()) {
            counters.putIfAbsent(m.group(1).strip(), Long.parseLong(m.group(2)));
        }
        return counters;
    }

    static String application(String log) {
        return first(log, "Submitted application (application_\\d+_\\d+)", "its application id");
    }

    static String jobId(String log) {
        return first(log, "Running job: (job_\\d+_\\d+)", "its job id");
    }

    private static String first(String log, String regex, String what) {
        Matcher m = Pattern.compile(regex).matcher(log);
        if (!m.find()) {
            throw new IllegalStateException("the job client did not print " + what);
        }
        return m.group(1);
    }

    /** TeraValidate's checksum from its report; fails when it found anything out of order. */
    static String checksum(Path report) throws IOException {
        String found = Files.readString(report.resolve("part-r-00000"));
        Matcher m = Pattern.compile("(?m)^checksum\\s+(\\S+)\\s*$").matcher(found);
        if (!m.find() || found.contains("misorder") || found.contains("error")) {
            throw new IllegalStateException("TeraValidate did not pass " + report + ": " + found.strip());
        }
        return m.group(1);
    }

    private static void delete(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> {
                try {
                    Files.delete(f);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
    }
}
