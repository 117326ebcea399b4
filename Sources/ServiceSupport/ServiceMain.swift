import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Hummingbird
import Logging
import Metrics
import NIOCore
import Prometheus
import ServiceLifecycle
import Shared
import UnixSignals

/// What a service's builder gets: its configuration, a logger, and the metrics registry behind `/metrics`.
package struct ServiceContext<Config: Sendable>: Sendable {
    package var config: Config
    package var common: CommonConfig
    package var logger: Logger
    package var registry: PrometheusCollectorRegistry
}

/// The start-up every Herald executable shares.
package enum ServiceMain {
    /// Reads the configuration (exit 2 with one line naming the variable when it is wrong), sets up JSON logging and
    /// Prometheus metrics, checks the topics, then runs the `ServiceGroup` that `build` returns until SIGTERM/SIGINT.
    /// `shutdownFloor`: the least a graceful stop needs (the notifier's drain), which `HERALD_SHUTDOWN_TIMEOUT_SECONDS`
    /// cannot shorten.
    package static func run<Config: Sendable>(
        service: String,
        parse: @Sendable ([String: String]) throws(ConfigError) -> Config,
        common: @Sendable (Config) -> CommonConfig,
        shutdownFloor: @Sendable (Config) -> Duration = { _ in .zero },
        build: @Sendable (ServiceContext<Config>) async throws -> [any Service]
    ) async -> Never {
        limitMallocArenas()
        let config: Config
        do {
            config = try parse(ProcessInfo.processInfo.environment)
        } catch {
            FileHandle.standardError.write(Data("herald-\(service): \(error)\n".utf8))
            exit(2)
        }
        let commonConfig = common(config)
        HeraldLogging.bootstrap(service: service, level: commonConfig.logLevel, format: commonConfig.logFormat)
        let registry = PrometheusCollectorRegistry()
        let factory = CatalogMetricsFactory(registry: registry)
        if let catalogued = MetricCatalog.Service(rawValue: service) { factory.registerZeroSeries(of: catalogued) }
        MetricsSystem.bootstrap(factory)
        var logger = Logger(label: "herald.\(service)")
        logger[metadataKey: "instance"] = .string(commonConfig.instanceID)
        for variable in commonConfig.unknownVariables {
            logger.warning("unknown environment variable ignored", metadata: ["variable": .string(variable)])
        }
        logger.info(
            "starting",
            metadata: [
                "kafka": .string(commonConfig.kafka.bootstrapServers),
                "librdkafka": .string(LibRdKafka.version),
                "http": .string("\(commonConfig.httpHost):\(commonConfig.httpPort)"),
            ])
        if let warning = LibRdKafka.startupWarning { logger.warning("\(warning)") }
        do {
            try await TopicSetup.prepare(commonConfig, logger: logger)
            let context = ServiceContext(config: config, common: commonConfig, logger: logger, registry: registry)
            let services = try await build(context)
            // Last, so that it hears the stop first; it returns at once, which must not end the group.
            let watchdog = ShutdownWatchdog(limit: max(commonConfig.shutdownTimeout, shutdownFloor(config)), logger: logger)
            let group = ServiceGroup(
                configuration: ServiceGroupConfiguration(
                    services: services.map { .init(service: $0) }
                        + [.init(service: watchdog, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore)],
                    gracefulShutdownSignals: [.sigterm, .sigint],
                    cancellationSignals: [],
                    logger: logger
                ))
            try await group.run()
        } catch {
            logger.critical("stopped on error", metadata: ["error": "\(error)"])
            exit(1)
        }
        logger.info("stopped")
        exit(0)
    }

    /// The HTTP application serving `router` on the configured address; logs the bound port once listening.
    package static func httpApplication<Context: RequestContext>(
        router: Router<Context>, common: CommonConfig, service: String, logger: Logger
    ) -> some Service where Context.Source == ApplicationRequestContextSource {
        httpApplication(responder: router.buildResponder(), common: common, service: service, logger: logger)
    }

    static func httpApplication<Responder: HTTPResponder>(
        responder: Responder, common: CommonConfig, service: String, logger: Logger
    ) -> some Service where Responder.Context: RequestContext, Responder.Context.Source == ApplicationRequestContextSource {
        Application(
            responder: responder,
            server: .http1(configuration: .init(idleTimeout: .seconds(Int64(common.httpIdleTimeout)))),
            configuration: ApplicationConfiguration(
                address: .hostname(common.httpHost, port: common.httpPort), serverName: "herald-\(service)"),
            onServerRunning: { channel in
                ListeningPort.set(channel.localAddress?.port ?? common.httpPort)
                logger.info(
                    "http listening",
                    metadata: [
                        "host": .string(common.httpHost),
                        "port": .stringConvertible(channel.localAddress?.port ?? common.httpPort),
                    ])
            },
            logger: logger
        )
    }

    /// The service's HTTP application: `router` with `/health` (running `checks`) and `/metrics` added. `/metrics` and
    /// the routes `operatorRoutes` adds are operator endpoints: behind `HERALD_OPERATOR_TOKEN` when it is set, else
    /// loopback peers only. They are registered on a group whose middleware is the check, so that the check is part of
    /// each of those routes: no spelling of a path that reaches one of them (`//metrics`, `/metrics/`) walks around it.
    package static func httpApplication<Config, Context: RequestContext>(
        router: Router<Context>, context: ServiceContext<Config>, service: String, checks: [HealthCheck],
        operatorRoutes: (RouterGroup<Context>) -> Void = { _ in }
    ) -> some Service where Context.Source == ApplicationRequestContextSource {
        if context.common.operatorToken == nil {
            context.logger.warning(
                "operator endpoints answer this machine only: set HERALD_OPERATOR_TOKEN to reach them from elsewhere (Prometheus, another container)")
        }
        let responder = responder(
            router: router, operatorToken: context.common.operatorToken, registry: context.registry, service: service,
            checks: checks, operatorRoutes: operatorRoutes)
        return httpApplication(responder: responder, common: context.common, service: service, logger: context.logger)
    }

    /// The responder of a service's HTTP application (what `httpApplication` serves; tests call it directly).
    package static func responder<Context: RequestContext>(
        router: Router<Context>, operatorToken: String?, registry: PrometheusCollectorRegistry, service: String,
        checks: [HealthCheck], operatorRoutes: (RouterGroup<Context>) -> Void = { _ in }
    ) -> some HTTPResponder<Context> {
        let operatorGroup = operatorGroup(router, token: operatorToken)
        OpsEndpoints.register(on: router, operatorRoutes: operatorGroup, service: service, checks: checks, registry: registry)
        operatorRoutes(operatorGroup)
        return MethodNotAllowedResponder(inner: router.buildResponder(), routes: router.routes.map { ("\($0.path)", $0.method) })
    }

    /// The group operator routes are added to: each of its routes answers only with the token (or, without one, to
    /// loopback peers).
    package static func operatorGroup<Context: RequestContext>(_ router: Router<Context>, token: String?) -> RouterGroup<Context> {
        router.group().add(middleware: OperatorAuthMiddleware<Context>(token: token))
    }

    /// Two malloc arenas unless `MALLOC_ARENA_MAX` says otherwise. glibc gives each thread that meets contention an
    /// arena of its own, up to 8 per core, and memory freed in one is not reused by another: with SQLite's, Kafka's and
    /// Swift's thread pools, that was 50–80 MB of the notifier's and orchestrator's resident size in the memory benchmark,
    /// and the whole-path benchmark did not tell the two apart (docs/performance.md, "Memory").
    static func limitMallocArenas() {
        #if canImport(Glibc)
        // `mallopt` is declared in <malloc.h>, which the Glibc module leaves out: found by name (RTLD_DEFAULT is a
        // null handle). `M_ARENA_MAX` is -8 there.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        if ProcessInfo.processInfo.environment["MALLOC_ARENA_MAX"] == nil, let symbol = dlsym(nil, "mallopt") {
            _ = unsafeBitCast(symbol, to: Mallopt.self)(-8, 2)
        }
        #endif
    }
}
