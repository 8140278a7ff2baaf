package org.rdmashuffle.spark;

import org.rdmashuffle.spark.metrics.ExecutorShuffleReport;

/**
 * What the engine's shuffle manager ({@code EngineShuffleManager}) tells the one Spark loaded
 * ({@link RdmaShuffleManager}) about this JVM's shuffle. Built for Java 17 (src/main/java17), so that
 * {@link RdmaShuffleManager} can ask without naming a class of the engine.
 */
interface ShuffleCarrier {
    /**
     * What carries this JVM's shuffle, for the main job and the tests: the provider and device, or why
     * Spark's built-in transport does; and how many blocks came over each.
     */
    String describe();

    /** What carries this JVM's shuffle and what it moved, for the metrics plugin: report {@code seq} of {@code executorId}. */
    ExecutorShuffleReport report(String executorId, long seq);

    /**
     * What this JVM fetched: {@code [blocks over RDMA, blocks over the built-in transport, bytes over
     * RDMA, bytes over the built-in transport]}. Blocks over the built-in transport count when asked
     * for, bytes when delivered.
     */
    long[] fetchCounts();

    /** The thread that started this JVM's engine, or null if none has started (nor tried to). */
    String engineStartedOn();
}
