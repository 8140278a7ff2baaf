/**
 * The Spark 4.2 adapter ({@code spark.shuffle.manager=org.rdmashuffle.spark.RdmaShuffleManager}).
 *
 * <p>Not built yet: this module holds only its place in the build (see the shuffle-spark issue).
 */
package org.rdmashuffle.spark;
