package org.rdmashuffle.verbs;

/**
 * A post of a work-request chain was refused by the provider. The work requests before
 * {@link #failedIndex()} were posted and will complete; the failed one and all after it were not.
 */
public final class PostException extends VerbsException {
    private static final long serialVersionUID = 1L;

    private final int failedIndex;
    private final long failedWrId;
    private final int chainLength;

    public PostException(String call, int errno, int failedIndex, long failedWrId, int chainLength) {
        super(call, errno, failedIndex < 0
                ? "the provider did not say which work request of a chain of " + chainLength + " it refused"
                : "work request #" + failedIndex + " (wr_id " + failedWrId + ") of a chain of " + chainLength
                        + " was refused; the " + failedIndex + " before it were posted");
        this.failedIndex = failedIndex;
        this.failedWrId = failedWrId;
        this.chainLength = chainLength;
    }

    /** Index in the chain of the first work request that was not posted ({@code bad_wr}), or -1 if unknown. */
    public int failedIndex() {
        return failedIndex;
    }

    /** wr_id of the first work request that was not posted. */
    public long failedWrId() {
        return failedWrId;
    }

    /** How many work requests of the chain were posted before the failure. */
    public int postedBefore() {
        return failedIndex;
    }

    /** How many work requests the post was asked to submit. */
    public int chainLength() {
        return chainLength;
    }
}
