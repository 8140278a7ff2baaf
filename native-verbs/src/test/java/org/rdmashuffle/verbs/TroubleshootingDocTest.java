package org.rdmashuffle.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * docs/troubleshooting.md is keyed by the lines {@link Trouble} prints: every code has its section.
 * Tagged structure: it reads the repository's docs, which the Soft-RoCE guest's test run has not.
 */
@Tag("structure")
class TroubleshootingDocTest {
    @Test
    void everyTroublesCode_hasItsSection_showingItsLine() throws Exception {
        String doc = Files.readString(Path.of("../docs/troubleshooting.md"));
        for (Trouble t : Trouble.values()) {
            String heading = "## " + t.code() + " " + t.key() + "\n";
            int at = doc.indexOf(heading);
            assertTrue(at >= 0, "docs/troubleshooting.md has no section '" + heading.strip() + "'");
            int next = doc.indexOf("\n## ", at + heading.length());
            String section = doc.substring(at, next < 0 ? doc.length() : next);
            assertTrue(section.contains(t.prefix() + " saw "), t + ": the section shows the line as printed");
            assertTrue(section.contains("**Fix**"), t + ": the section says what to change");
        }
    }

    @Test
    void aLine_namesWhatWasSeenNeededAndToChange_andIsFoundInACause() {
        String line = Trouble.MEMLOCK.line("memlock limit is 8 MiB", "64 MiB to register memory", "ulimit -l");
        assertEquals("RS03 memlock: saw memlock limit is 8 MiB; needs 64 MiB to register memory; fix: ulimit -l", line);
        Exception wrapped = new RuntimeException("the engine cannot start", new IllegalStateException("ibverbs: " + line));
        assertEquals(Optional.of(Trouble.MEMLOCK), Trouble.in(wrapped));
        assertEquals(Optional.empty(), Trouble.in(new RuntimeException("something else")));
    }
}
