package org.rdmashuffle.verbs.software;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/** A link loop serves every link of the process's software devices: nothing one link's work throws may end it. */
class LinkLoopTest {

    /** An Error (a stack overflow on a peer's crafted frame, say) in one link's work once ended the loop's thread, silently. */
    @Test
    void anErrorInOneLinksWorkDoesNotStopTheLoop() throws InterruptedException {
        LinkLoop.Group group = LinkLoop.Group.acquire();
        try {
            LinkLoop loop = group.next();
            CountDownLatch after = new CountDownLatch(1);
            loop.execute(() -> {
                throw new StackOverflowError("a link's work failing on purpose");
            });
            loop.execute(after::countDown);
            assertTrue(after.await(10, TimeUnit.SECONDS), "the loop stopped serving after an Error");
        } finally {
            LinkLoop.Group.release(group);
        }
    }
}
