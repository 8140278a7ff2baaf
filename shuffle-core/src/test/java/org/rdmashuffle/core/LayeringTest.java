package org.rdmashuffle.core;

import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * shuffle-core's packages in their order (docs/architecture.md, "Packages"): the wire records and
 * configuration at the bottom, then the transport, then the fetching ({@code client}) and serving
 * ({@code server}) sides, which never import each other, then the engine that composes them, then
 * {@code service} (servers built on the engine). A new package cycle, an import that climbs back up,
 * or a provider named by its class fails here, at build time, rather than in review.
 * Host-only ({@code structure}): the layering does not change on a device.
 */
@Tag("structure")
class LayeringTest {
    private static JavaClasses core;

    @BeforeAll
    static void importCore() {
        core = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("org.rdmashuffle.core");
    }

    @Test
    void thePackagesHaveNoCycle() {
        slices().matching("org.rdmashuffle.core.(*)..").should().beFreeOfCycles().check(core);
    }

    @Test
    void noPackageImportsALayerAboveIt() {
        layeredArchitecture().consideringOnlyDependenciesInLayers()
                .layer("Base").definedBy("org.rdmashuffle.core.config..", "org.rdmashuffle.core.protocol..",
                        "org.rdmashuffle.core.buffer..", "org.rdmashuffle.core.control..")
                .layer("Transport").definedBy("org.rdmashuffle.core.transport..")
                .layer("Client").definedBy("org.rdmashuffle.core.client..")
                .layer("Server").definedBy("org.rdmashuffle.core.server..")
                .layer("Engine").definedBy("org.rdmashuffle.core")
                .layer("Service").definedBy("org.rdmashuffle.core.service..")
                .whereLayer("Service").mayNotBeAccessedByAnyLayer()
                .whereLayer("Engine").mayOnlyBeAccessedByLayers("Service")
                .whereLayer("Client").mayOnlyBeAccessedByLayers("Engine", "Service")
                .whereLayer("Server").mayOnlyBeAccessedByLayers("Engine", "Service")
                .whereLayer("Transport").mayOnlyBeAccessedByLayers("Client", "Server", "Engine", "Service")
                .check(core);
    }

    /** The engine asks a provider its traits; only native-verbs knows which providers there are. */
    @Test
    void nothingNamesAProvidersClass() {
        noClasses().should().dependOnClassesThat().resideInAnyPackage("org.rdmashuffle.verbs.software..",
                "org.rdmashuffle.verbs.ibverbs..").check(core);
    }
}
