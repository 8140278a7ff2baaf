/**
 * Hadoop 3.5: the NodeManager's shuffle service over RDMA and MapReduce's reduce side.
 *
 * <ul>
 *   <li>{@link org.rdmashuffle.hadoop.RdmaShuffleService}: the stock ShuffleHandler plus an engine in
 *       service mode ({@code MapReduceServing}) that serves map outputs found on the node's disks
 *       ({@code MapOutputFiles}); {@link org.rdmashuffle.hadoop.RdmaSparkShuffleService}: Spark's
 *       service plus {@code SparkServing}.
 *   <li>{@link org.rdmashuffle.hadoop.RdmaShuffleConsumerPlugin}: {@code EngineShuffleConsumer},
 *       MapReduce's scheduler and merge manager with fetchers ({@code RdmaFetcher}) that read blocks
 *       with the engine.
 * </ul>
 *
 * The classes YARN and MapReduce load by name, and the little they need, are in src/main/java17,
 * built for Java 17: on a JVM that cannot run the engine they leave the shuffle to the stock HTTP
 * shuffle or Spark's service and say why ({@code RS09}). The engine's sides are made by name
 * ({@code org.rdmashuffle.verbs.EngineRuntime}) only where the JVM can run them.
 *
 * Settings: {@code rdma.shuffle.*}; docs/yarn.md.
 */
package org.rdmashuffle.hadoop;
