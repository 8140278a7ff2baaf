/**
 * Hadoop 3.5: the NodeManager's shuffle service over RDMA and MapReduce's reduce side.
 *
 * <ul>
 *   <li>{@link org.rdmashuffle.hadoop.RdmaShuffleService}: the stock ShuffleHandler plus an engine in
 *       service mode that serves map outputs found on the node's disks ({@code MapOutputFiles}).
 *   <li>{@link org.rdmashuffle.hadoop.RdmaShuffleConsumerPlugin}: MapReduce's scheduler and merge
 *       manager with fetchers ({@code RdmaFetcher}) that read blocks with the engine.
 * </ul>
 *
 * Settings: {@code rdma.shuffle.*}; docs/yarn.md.
 */
package org.rdmashuffle.hadoop;
