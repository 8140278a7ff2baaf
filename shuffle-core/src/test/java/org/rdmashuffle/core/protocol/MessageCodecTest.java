package org.rdmashuffle.core.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Metadata messages round-trip; malformed, oversized and hostile bytes are refused by name, never crash. */
class MessageCodecTest {
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment buffer = arena.allocate(4096);
    private final MessageCodec codec = new MessageCodec(4096);

    @AfterEach
    void free() {
        arena.close();
    }

    @Test
    void everyMessageRoundTrips() {
        List<Message> messages = List.of(
                new Message.FetchRequest(7, 3, List.of(new BlockId(3, 0, 2, 9), new BlockId(3, 1L << 40, 0, 1))),
                new Message.FetchResponse(7, List.of(new BlockDescriptor(3, 5, 2, 9, 0x7f00_1234_5000L, 12345, -17, 40_000),
                        new BlockDescriptor(3, 6, 2, 9, 0, 0, 0))),
                new Message.ErrorResponse(8, "no map output 4 of shuffle 3 is registered here (ünïcode ok)"),
                new Message.ErrorResponse(9, Message.ErrorKind.NO_SUCH_OUTPUT, new BlockId(3, 1L << 40, 2, 5), "lost"));
        for (Message m : messages) {
            int n = codec.encode(m, buffer);
            assertEquals(m, codec.decode(buffer, n));
        }
    }

    @Test
    void heldAnswersAndReleasesRoundTrip_aHeldAnswerKeepingItsFlag_andAMalformedReleaseIsRefusedByWhatIsWrong() {
        MapOutputLayout layout = new MapOutputLayout(3, 5, 0x7f00_0000_0000L, 9, new long[] {0, 10, 30});
        List<Message> messages = List.of(
                new Message.FetchResponse(7, List.of(new BlockDescriptor(3, 5, 0, 1, 0x7f00_0000_0000L, 10, 9)), List.of(), true),
                new Message.Release(List.of(new Message.Released(3, 5, 1), new Message.Released(0, 1L << 40, 70_000))));
        for (Message m : messages) {
            int n = codec.encode(m, buffer);
            assertEquals(m, codec.decode(buffer, n));
        }
        Message.FetchResponse withLayout = new Message.FetchResponse(8,
                List.of(new BlockDescriptor(3, 5, 1, 2, 0x7f00_0000_000aL, 20, 9)), List.of(layout), true);
        Message.FetchResponse back = (Message.FetchResponse) codec.decode(buffer, codec.encode(withLayout, buffer));
        assertTrue(back.held());
        assertEquals(withLayout.blocks(), back.blocks());
        assertArrayEquals(layout.offsets(), back.layouts().getFirst().offsets());
        Message.FetchResponse unheld = new Message.FetchResponse(7, List.of(new BlockDescriptor(3, 5, 0, 1, 0x1000, 10, 9)));
        assertEquals(false, ((Message.FetchResponse) codec.decode(buffer, codec.encode(unheld, buffer))).held());

        int n = codec.encode(new Message.Release(List.of(new Message.Released(3, 5, 1))), buffer);
        buffer.set(ValueLayout.JAVA_BYTE, n - 1, (byte) 0); // a release of no answer
        assertTrue(assertThrows(MalformedMessageException.class, () -> codec.decode(buffer, n)).getMessage()
                .contains("map 5 of shuffle 3 for 0 answers"));
        buffer.set(ValueLayout.JAVA_BYTE, 1, (byte) 0); // of no output at all
        assertTrue(assertThrows(MalformedMessageException.class, () -> codec.decode(buffer, 2)).getMessage()
                .contains("a release of no output"));
        buffer.set(ValueLayout.JAVA_BYTE, 1, (byte) 100); // claiming more outputs than its bytes can hold
        assertTrue(assertThrows(MalformedMessageException.class, () -> codec.decode(buffer, n)).getMessage()
                .contains("released output count 100"));
        assertThrows(IllegalArgumentException.class, () -> new Message.Release(List.of()));
    }

    @Test
    void aMessageOverTheBoundIsNotSent() {
        List<BlockDescriptor> many = new ArrayList<>();
        for (int i = 0; i < 400; i++) {
            many.add(new BlockDescriptor(1, i, 0, 1, 1L << 45, 1L << 30, i));
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> codec.encode(new Message.FetchResponse(1, many), buffer));
        assertTrue(e.getMessage().contains("does not fit in 4096 bytes"), e.getMessage());
    }

    /**
     * An answer of 10,900 descriptors (what one 32 KiB request can name) does not fit a 32 KiB buffer:
     * the refusal used to be text of every descriptor (the record's toString, ~2 MB, built twice on the
     * poller). Its text now names the message's counts only: a constant, whatever it carries.
     */
    @Test
    void anAnswerOfTenThousandDescriptorsIsRefusedInTextOfItsCounts_notOfItsDescriptors() {
        try (Arena big = Arena.ofConfined()) {
            MemorySegment slot = big.allocate(32 << 10);
            MessageCodec codec32k = new MessageCodec(32 << 10);
            List<BlockDescriptor> many = java.util.Collections.nCopies(10_900,
                    new BlockDescriptor(3, 5, 2, 9, 0x7f00_1234_5000L, 16L << 30, -17, 40_000));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> codec32k.encode(new Message.FetchResponse(7, many), slot));
            assertTrue(e.getMessage().length() < 200, "the refusal's text is " + e.getMessage().length() + " characters");
            assertTrue(e.getMessage().contains("10900 descriptors"), e.getMessage());
            assertEquals(-1, codec32k.tryEncode(new Message.FetchResponse(7, many), slot));
        }
    }

    /**
     * What a server answers a request with is sized before anything is described: as many descriptors as
     * {@link MessageCodec#descriptorsFitting} says, of the longest encoding each field has, fit.
     */
    @Test
    void theMostDescriptorsThatFitABufferEncodeInIt_whateverTheirValues() {
        try (Arena big = Arena.ofConfined()) {
            for (int bytes : new int[] {ConnectCodec.MIN_RECEIVE_BUFFER_SIZE, 4096, 32 << 10}) {
                MemorySegment slot = big.allocate(bytes);
                BlockDescriptor longest = new BlockDescriptor(Integer.MAX_VALUE, Long.MIN_VALUE, Integer.MAX_VALUE - 1,
                        Integer.MAX_VALUE, -1L, Long.MAX_VALUE, -1, Long.MAX_VALUE);
                int n = MessageCodec.descriptorsFitting(bytes);
                assertTrue(n > 0, bytes + " bytes hold no descriptor");
                Message.FetchResponse answer = new Message.FetchResponse(Long.MIN_VALUE,
                        java.util.Collections.nCopies(n, longest), List.of(), true);
                int length = new MessageCodec(bytes).encode(answer, slot);
                assertTrue(length <= bytes, length + " bytes encoded in " + bytes);
                assertEquals(-1, new MessageCodec(bytes).tryEncode(new Message.FetchResponse(Long.MIN_VALUE,
                        java.util.Collections.nCopies(n + bytes / 40, longest), List.of(), true), slot), "more than fit do not");
            }
        }
    }

    @Test
    void lengthsOutsideTheBoundOrTheBufferAreRefused() {
        assertTrue(assertThrows(MalformedMessageException.class, () -> codec.decode(buffer, 0)).getMessage().contains("0 bytes"));
        assertThrows(MalformedMessageException.class, () -> codec.decode(buffer, 4097));
        MessageCodec small = new MessageCodec(8192);
        assertTrue(assertThrows(MalformedMessageException.class, () -> small.decode(buffer, 5000)).getMessage()
                .contains("buffer 4096"));
    }

    @Test
    void truncatedAndTrailingBytesAreRefused() {
        int n = codec.encode(new Message.FetchRequest(1, 2, List.of(BlockId.of(2, 3, 0), BlockId.of(2, 4, 0), BlockId.of(2, 5, 0))), buffer);
        MalformedMessageException cut = assertThrows(MalformedMessageException.class, () -> codec.decode(buffer, n - 2));
        assertTrue(cut.getMessage().startsWith("undecodable message"), cut.getMessage());
        MalformedMessageException trailing = assertThrows(MalformedMessageException.class, () -> codec.decode(buffer, n + 3));
        assertTrue(trailing.getMessage().contains("3 trailing bytes"), trailing.getMessage());
    }

    @Test
    void unknownTypesAndInvalidFieldsAreRefused() {
        buffer.set(ValueLayout.JAVA_BYTE, 0, (byte) 99); // a type no one defined
        assertEquals("unknown message type 99", assertThrows(MalformedMessageException.class, () -> codec.decode(buffer, 8)).getMessage());
        buffer.set(ValueLayout.JAVA_BYTE, 0, (byte) 3); // Kryo's own id for String: not reachable
        assertThrows(MalformedMessageException.class, () -> codec.decode(buffer, 8));
        int n = codec.encode(new Message.FetchRequest(1, 2, List.of(BlockId.of(2, 3, 4))), buffer);
        MessageCodec loose = new MessageCodec(4096);
        // Forge an empty partition range: rewrite the last varint (the span) to 0.
        buffer.set(ValueLayout.JAVA_BYTE, n - 1, (byte) 0);
        MalformedMessageException e = assertThrows(MalformedMessageException.class, () -> loose.decode(buffer, n));
        assertTrue(e.getMessage().contains("map 3, partitions from 4 spanning 0"), e.getMessage());

        // An error of a kind no one defined: the byte after the tag and the one-byte request id.
        codec.encode(new Message.ErrorResponse(1, Message.ErrorKind.REFUSED, BlockId.of(2, 3, 4), "no"), buffer);
        buffer.set(ValueLayout.JAVA_BYTE, 2, (byte) 7);
        e = assertThrows(MalformedMessageException.class, () -> loose.decode(buffer, 16));
        assertTrue(e.getMessage().contains("unknown kind 7"), e.getMessage());
    }

    @Test
    void aResponseWithLayoutsRoundTrips_andALayoutPastTheAddressSpaceIsRefused() {
        org.rdmashuffle.core.protocol.MapOutputLayout layout = new org.rdmashuffle.core.protocol.MapOutputLayout(3, 7L, 0x7000_0000L,
                42, new long[] {0, 10, 10, 4000, 1L << 33});
        int n = codec.encode(new Message.FetchResponse(5, List.of(), List.of(layout)), buffer);
        Message.FetchResponse back = (Message.FetchResponse) codec.decode(buffer, n);
        assertEquals(1, back.layouts().size());
        org.rdmashuffle.core.protocol.MapOutputLayout got = back.layouts().getFirst();
        assertEquals(List.of(3, 7L, 0x7000_0000L, 42), List.of(got.shuffleId(), got.mapId(), got.address(), got.rkey()));
        org.junit.jupiter.api.Assertions.assertArrayEquals(layout.offsets(), got.offsets());
        assertEquals(n - 4, layout.encodedSize(), "tag, request id, block count and layout count aside");

        org.rdmashuffle.core.protocol.MapOutputLayout wraps = new org.rdmashuffle.core.protocol.MapOutputLayout(3, 7L, -16L, 42,
                new long[] {0, 100});
        int w = codec.encode(new Message.FetchResponse(5, List.of(), List.of(wraps)), buffer);
        MalformedMessageException e = assertThrows(MalformedMessageException.class, () -> codec.decode(buffer, w));
        assertTrue(e.getMessage().contains("past the address space"), e.getMessage());
    }

    @Test
    void hostileCountsAndLengthsDoNotAllocate() {
        // A response claiming 2^31-1 descriptors, and an error claiming a 2 GB reason: refused before allocating.
        // An empty response ends with its block count and its layout count, one byte each.
        int n = codec.encode(new Message.FetchResponse(1, List.of()), buffer);
        for (int i = 0; i < 5; i++) {
            buffer.set(ValueLayout.JAVA_BYTE, n - 2 + i, i < 4 ? (byte) 0xFF : (byte) 0x07);
        }
        MalformedMessageException count = assertThrows(MalformedMessageException.class, () -> codec.decode(buffer, n + 3));
        assertTrue(count.getMessage().contains("block count"), count.getMessage());
        int l = codec.encode(new Message.FetchResponse(1, List.of()), buffer);
        for (int i = 0; i < 5; i++) {
            buffer.set(ValueLayout.JAVA_BYTE, l - 1 + i, i < 4 ? (byte) 0xFF : (byte) 0x07);
        }
        MalformedMessageException layouts = assertThrows(MalformedMessageException.class, () -> codec.decode(buffer, l + 4));
        assertTrue(layouts.getMessage().contains("layout count"), layouts.getMessage());
        int m = codec.encode(new Message.ErrorResponse(2, ""), buffer);
        buffer.set(ValueLayout.JAVA_BYTE, m - 1, (byte) 0xFF);
        for (int i = 0; i < 4; i++) {
            buffer.set(ValueLayout.JAVA_BYTE, m + i, i < 3 ? (byte) 0xFF : (byte) 0x07);
        }
        MalformedMessageException reason = assertThrows(MalformedMessageException.class, () -> codec.decode(buffer, m + 4));
        assertTrue(reason.getMessage().contains("reason of"), reason.getMessage());
    }

    @Test
    void randomBytesNeverEscapeAsAnythingButMalformed() {
        Random random = new Random(42);
        byte[] noise = new byte[256];
        int decoded = 0;
        for (int i = 0; i < 5000; i++) {
            random.nextBytes(noise);
            int length = 1 + random.nextInt(noise.length);
            MemorySegment.copy(noise, 0, buffer, ValueLayout.JAVA_BYTE, 0, length);
            try {
                codec.decode(buffer, length);
                decoded++;
            } catch (MalformedMessageException expected) {
                // the only failure allowed
            }
        }
        assertTrue(decoded < 5000, "noise should rarely decode");
    }
}
