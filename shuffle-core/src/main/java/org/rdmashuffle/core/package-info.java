/**
 * The engine-neutral RDMA shuffle engine: registered map outputs, metadata over SRQ, batched
 * RDMA_READ chains and the completion-queue poller. Spark and Hadoop adapters sit on top of it.
 *
 * <p>Not built yet: this module holds only its place in the build (see the shuffle-core issue).
 */
package org.rdmashuffle.core;
