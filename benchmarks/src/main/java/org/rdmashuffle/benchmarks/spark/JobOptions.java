package org.rdmashuffle.benchmarks.spark;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The job's options ({@link ShuffleJob}), read from its command line. {@code --job} picks the job: {@code
 * main} (the default: rows grouped by key) or {@code sort} (100-byte records sorted by key, TeraSort's
 * shape; {@link SortJobRows}); {@code --rows} defaults to 5,000,000 for the one and 3,500,000 for the
 * other (each about 0.35 GB of shuffle; the sort's is about 106 bytes a row). Maps and reducers are set
 * apart ({@code --maps}, {@code --reducers}) or together ({@code --partitions}, both); blocks grow as
 * maps x reducers, so they are how a run reaches the many-small-blocks regime. Nonsense (a count of 0
 * or below, a number that is not one, an unknown option) is refused naming the option. {@code
 * --profile} records every executor of every run with JDK Flight Recorder (both shuffles alike); {@code
 * --prometheus} scrapes the driver's Prometheus endpoint during and after each run ({@link PrometheusScrape}).
 */
record JobOptions(String job, int rows, int maps, int reducers, String shuffle, int compare, int executors, boolean killExecutor,
                  boolean releaseExecutors, Path pauseUntil, int holdAfterMapsSeconds, int executorWaitSeconds,
                  Map<String, String> variant, boolean profile, boolean prometheus, boolean warmUp) {
    static final String USAGE = "ShuffleJob [--job main|sort] [--rows N] [--partitions P | --maps M --reducers R] [--shuffle rdma|builtin|both] "
            + "[--compare PAIRS] [--executors E] [--kill-executor-in-reduce] [--release-executors-after-maps] "
            + "[--pause-rdma-reduce-until FILE] [--hold-after-maps SECONDS] [--executor-wait SECONDS] [--variant spark.KEY=VALUE ...] [--profile] [--prometheus] "
            + "[--no-warm-up]";

    /**
     * The rows of the warm-up a comparison starts with: the job's own up to the default size (what warms
     * the bed is an application's start, its classes and the first files on each disk, not the data).
     */
    int warmUpRows() {
        return Math.min(rows, Math.max(maps, defaultRows(job)));
    }

    /** The rows a job makes unless --rows says otherwise: about 0.35 GB of shuffle either way. */
    private static int defaultRows(String job) {
        return job.equals("sort") ? 3_500_000 : 5_000_000;
    }

    /** The same options with {@code n} rows. */
    JobOptions withRows(int n) {
        return new JobOptions(job, n, maps, reducers, shuffle, compare, executors, killExecutor, releaseExecutors, pauseUntil,
                holdAfterMapsSeconds, executorWaitSeconds, variant, profile, prometheus, warmUp);
    }

    static JobOptions parse(String... args) {
        String job = "main";
        Integer rows = null;
        Integer partitions = null;
        Integer maps = null;
        Integer reducers = null;
        String shuffle = "rdma";
        int compare = 0;
        int executors = 2;
        boolean killExecutor = false;
        boolean releaseExecutors = false;
        Path pauseUntil = null;
        int holdAfterMaps = 0;
        int executorWait = 120;
        Map<String, String> variant = new LinkedHashMap<>();
        boolean profile = false;
        boolean prometheus = false;
        boolean warmUp = true;
        for (int i = 0; i < args.length; i++) {
            String option = args[i];
            switch (option) {
                case "--job" -> {
                    job = value(args, ++i, option);
                    if (!List.of("main", "sort").contains(job)) {
                        throw new IllegalArgumentException("--job takes main or sort, not '" + job + "'");
                    }
                }
                case "--rows" -> rows = positive(option, value(args, ++i, option));
                case "--partitions" -> partitions = positive(option, value(args, ++i, option));
                case "--maps" -> maps = positive(option, value(args, ++i, option));
                case "--reducers" -> reducers = positive(option, value(args, ++i, option));
                case "--shuffle" -> {
                    shuffle = value(args, ++i, option);
                    if (!List.of("rdma", "builtin", "both").contains(shuffle)) {
                        throw new IllegalArgumentException("--shuffle takes rdma, builtin or both, not '" + shuffle + "'");
                    }
                }
                case "--compare" -> compare = positive(option, value(args, ++i, option));
                case "--executors" -> executors = positive(option, value(args, ++i, option));
                case "--kill-executor-in-reduce" -> killExecutor = true;
                case "--release-executors-after-maps" -> releaseExecutors = true;
                case "--profile" -> profile = true;
                case "--prometheus" -> prometheus = true;
                case "--no-warm-up" -> warmUp = false;
                case "--pause-rdma-reduce-until" -> pauseUntil = Path.of(value(args, ++i, option));
                case "--hold-after-maps" -> holdAfterMaps = positive(option, value(args, ++i, option));
                case "--executor-wait" -> executorWait = positive(option, value(args, ++i, option));
                case "--variant" -> {
                    String kv = value(args, ++i, option);
                    int eq = kv.indexOf('=');
                    if (eq <= 0 || !kv.startsWith("spark.")) {
                        throw new IllegalArgumentException("--variant takes spark.KEY=VALUE, not '" + kv + "'");
                    }
                    variant.put(kv.substring(0, eq), kv.substring(eq + 1));
                }
                default -> throw new IllegalArgumentException("unknown argument " + option + " (usage: " + USAGE + ")");
            }
        }
        if (shuffle.equals("both") && compare > 0) {
            throw new IllegalArgumentException("--shuffle both runs each shuffle once, --compare in balanced pairs: give one of them");
        }
        if (partitions != null && (maps != null || reducers != null)) {
            throw new IllegalArgumentException("--partitions sets both --maps and --reducers: give either it or them");
        }
        int m = maps != null ? maps : partitions != null ? partitions : 16;
        int r = reducers != null ? reducers : partitions != null ? partitions : 16;
        if (rows == null) {
            rows = defaultRows(job);
        }
        if (rows < m) {
            throw new IllegalArgumentException("--rows " + rows + " is fewer than the " + m + " maps (--maps): every map writes rows");
        }
        return new JobOptions(job, rows, m, r, shuffle, compare, executors, killExecutor, releaseExecutors, pauseUntil, holdAfterMaps,
                executorWait, java.util.Collections.unmodifiableMap(variant), profile, prometheus, warmUp);
    }

    private static String value(String[] args, int i, String option) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value (usage: " + USAGE + ")");
        }
        return args[i];
    }

    private static int positive(String option, String value) {
        return org.rdmashuffle.benchmarks.CommandLine.atLeast(option, value, 1);
    }
}
