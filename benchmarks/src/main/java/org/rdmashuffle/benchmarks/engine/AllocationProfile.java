package org.rdmashuffle.benchmarks.engine;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;

/**
 * Where a run's heap allocation comes from, by layer: JFR's allocation samples over the run, each
 * sample's weight (the bytes it stands for) given to the first frame of its stack that is not the
 * JDK's own. An estimate (samples, not every object), but one that separates the engine's allocation
 * from the software provider's and the benchmark's own (its queue, its records), which the JVM's
 * allocation counter lumps together. One recording over the whole benchmark, cut into runs by time:
 * a sample's weight is what its thread allocated since its previous sample, so a recording per run
 * would give a run's first samples the allocation between runs.
 */
final class AllocationProfile {
    static final String ENGINE = "engine (shuffle-core)";
    static final String PROVIDER = "verbs provider (software)";
    static final String HARNESS = "benchmark harness";
    static final String SPARK = "Spark network-common/shuffle";
    static final String NETTY = "Netty";
    static final String OTHER = "JDK, JFR, class loading";

    private record Sampled(Instant at, String layer, long bytes) {
    }

    private final Recording recording = new Recording();
    private List<Sampled> samples;

    private AllocationProfile() {
        recording.enable("jdk.ObjectAllocationSample").with("throttle", "20000/s").withStackTrace();
        recording.setToDisk(true);
    }

    static AllocationProfile start() {
        AllocationProfile p = new AllocationProfile();
        p.recording.start();
        return p;
    }

    /** Stops the recording and reads its samples. */
    void stop() throws IOException {
        recording.stop();
        Path file = Files.createTempFile("fetch-benchmark-alloc", ".jfr");
        try {
            recording.dump(file);
            samples = new ArrayList<>();
            for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
                if (e.getEventType().getName().equals("jdk.ObjectAllocationSample")) {
                    samples.add(new Sampled(e.getStartTime(), layerOf(e.getStackTrace()), e.getLong("weight")));
                }
            }
        } finally {
            recording.close();
            Files.deleteIfExists(file);
        }
    }

    /** Bytes allocated by layer in {@code [from, to)} (estimated from the samples' weights); after {@link #stop()}. */
    Map<String, Long> between(Instant from, Instant to) {
        Map<String, Long> bytes = new TreeMap<>();
        for (Sampled s : samples) {
            if (!s.at().isBefore(from) && s.at().isBefore(to)) {
                bytes.merge(s.layer(), s.bytes(), Long::sum);
            }
        }
        return bytes;
    }

    private static String layerOf(RecordedStackTrace stack) {
        if (stack == null) {
            return OTHER;
        }
        for (RecordedFrame f : stack.getFrames()) {
            String c = f.getMethod().getType().getName();
            if (c.startsWith("org.rdmashuffle.core.")) {
                return ENGINE;
            } else if (c.startsWith("org.rdmashuffle.verbs.")) {
                return PROVIDER;
            } else if (c.startsWith("org.rdmashuffle.benchmarks.")) {
                return HARNESS;
            } else if (c.startsWith("org.apache.spark.")) {
                return SPARK;
            } else if (c.startsWith("io.netty.")) {
                return NETTY;
            } else if (c.startsWith("jdk.jfr.")) {
                return OTHER;
            }
        }
        return OTHER;
    }
}
