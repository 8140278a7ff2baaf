/**
 * The YARN auxiliary service and the MapReduce shuffle consumer.
 *
 * <p>Not built yet: this module holds only its place in the build (see the shuffle-hadoop issue).
 */
package org.rdmashuffle.hadoop;
