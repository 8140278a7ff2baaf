/**
 * The Spark 4.2 adapter: {@code spark.shuffle.manager=org.rdmashuffle.spark.RdmaShuffleManager}.
 *
 * <p>Spark's sort-shuffle writers write as always ({@link org.rdmashuffle.spark.RdmaShuffleWriter}
 * registers each committed output with the engine); Spark's fetch iterator reads as always, its remote
 * fetches served by RDMA ({@link org.rdmashuffle.spark.RdmaShuffleReader},
 * {@link org.rdmashuffle.spark.RdmaBlockStoreClient}). Settings: {@code spark.shuffle.rdma.*}
 * (docs/configuration.md).
 */
package org.rdmashuffle.spark;
