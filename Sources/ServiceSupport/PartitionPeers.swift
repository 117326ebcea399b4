import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Shared

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Questions an instance of a service puts to the other instances about the partitions they own, and their answers:
/// what a request needs from partitions spread over several instances (an installation's inbox sits in the partitions
/// of every profile that held it; an SMS reply names a phone number any partition may hold). Kafka Streams' interactive
/// queries are the model, as for `ReadForwarding`, which sends a whole request to the one owner it needs. This is one
/// service's instances asking each other; services still talk only through Kafka.
///
/// A question names its partitions, and the instance asked answers for exactly those, or says it does not run one of
/// them (503): an answer never leaves a partition out. Only instances of the service can ask: a question carries the
/// key the instance asked drew at its start and announced with its partitions on `herald.owners`
/// (`OwnerAnnouncement.peerKey`), so reaching the HTTP port is not enough to put one.
package struct PartitionPeers: Sendable {
    /// This instance's key, which its peers present.
    package let key: String
    let instance: String
    /// The partition's owner as this instance last heard (`PartitionDirectory.owner(of:)`).
    let owner: @Sendable (Int32) -> OwnerAnnouncement?
    /// Whether this instance runs the partition: it answers for those itself.
    let runs: @Sendable (Int32) -> Bool
    let timeout: TimeInterval

    package init(
        instance: String, key: String = PartitionPeers.drawKey(), timeout: TimeInterval = 5,
        owner: @escaping @Sendable (Int32) -> OwnerAnnouncement?, runs: @escaping @Sendable (Int32) -> Bool
    ) {
        self.instance = instance
        self.key = key
        self.timeout = timeout
        self.owner = owner
        self.runs = runs
    }

    /// 32 random bytes, hex.
    package static func drawKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }.hexString
    }

    /// A partition no instance answers for now (a rebalance is moving it, its owner's announcement is not read yet, or
    /// the owner did not answer): the request is to be retried.
    package struct Unavailable: Error, CustomStringConvertible {
        package var partition: Int32
        package var reason: String
        package var description: String { "partition \(partition): \(reason)" }

        package init(partition: Int32, reason: String) {
            self.partition = partition
            self.reason = reason
        }

        /// 503 with `Retry-After: 1`.
        package var response: Response { ReadForwarding.unavailable("partition \(partition) is not answered now (\(reason)): retry") }
    }

    /// A question about some partitions, as it travels.
    struct Asked<Question: Codable>: Codable {
        var partitions: [Int32]
        var question: Question
    }

    /// Asks `question` about each of `partitions`: this instance answers for the ones it runs (`local`, given them, nil
    /// when one stopped running meanwhile), their owners for the others, one request per owner, all at once. One
    /// answer per instance that answered; `Unavailable` when a partition has no owner that answers.
    package func ask<Question: Codable & Sendable, Answer: Codable & Sendable>(
        _ question: Question, about partitions: [Int32], at path: String,
        local: @escaping @Sendable ([Int32]) async throws -> Answer?
    ) async throws -> [Answer] {
        var here: [Int32] = []
        var elsewhere: [String: (owner: OwnerAnnouncement, partitions: [Int32])] = [:]
        for partition in Set(partitions).sorted() {
            if runs(partition) {
                here.append(partition)
                continue
            }
            guard let owner = owner(partition), owner.instance != instance else {
                throw Unavailable(partition: partition, reason: "no instance runs it")
            }
            guard owner.peerKey != nil else { throw Unavailable(partition: partition, reason: "its owner \(owner.instance) takes no questions") }
            elsewhere[owner.instance, default: (owner, [])].partitions.append(partition)
        }
        let asked = here
        return try await withThrowingTaskGroup(of: Answer.self) { group in
            if !asked.isEmpty {
                group.addTask {
                    guard let answer = try await local(asked) else {
                        throw Unavailable(partition: asked[0], reason: "it stopped running here")
                    }
                    return answer
                }
            }
            for (_, peer) in elsewhere {
                group.addTask { try await self.ask(peer.owner, about: peer.partitions, question, at: path) }
            }
            var answers: [Answer] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
    }

    private func ask<Question: Codable, Answer: Codable>(
        _ owner: OwnerAnnouncement, about partitions: [Int32], _ question: Question, at path: String
    ) async throws -> Answer {
        func unavailable(_ reason: String) -> Unavailable { Unavailable(partition: partitions[0], reason: "\(owner.instance): \(reason)") }
        guard let url = URL(string: owner.url + path) else { throw unavailable("its address is not a URL") }
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.httpBody = try JSONEncoder().encode(Asked(partitions: partitions, question: question))
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(owner.peerKey, forHTTPHeaderField: HTTPField.Name.heraldPeerKey.rawName)
        request.setValue(instance, forHTTPHeaderField: HTTPField.Name.heraldForwardedBy.rawName)
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await URLSession.shared.data(for: request)
        } catch {
            throw unavailable("did not answer: \(error.localizedDescription)")
        }
        guard let status = (response as? HTTPURLResponse)?.statusCode, status == 200 else {
            throw unavailable("answered \((response as? HTTPURLResponse)?.statusCode ?? 0)")
        }
        do {
            return try JSONDecoder().decode(Answer.self, from: data)
        } catch {
            throw unavailable("its answer does not read: \(error)")
        }
    }

    /// Where peers ask this instance `Question`s, at `path`: a question without this instance's key is refused (403),
    /// one about a partition it does not run answers 503 (`answer` returns nil).
    package func answer<Question: Codable & Sendable, Answer: Codable & Sendable>(
        _ question: Question.Type, at path: String, on router: Router<ServiceRequestContext>,
        _ answer: @escaping @Sendable (Question, [Int32]) async throws -> Answer?
    ) {
        let key = Array(key.utf8)
        router.post(RouterPath(path)) { request, context in
            guard let presented = request.headers[.heraldPeerKey], ConstantTime.equal(Array(presented.utf8), key) else {
                return Response.jsonError(.forbidden, "not_a_peer", "\(HTTPField.Name.heraldPeerKey.rawName): only this service's instances ask here")
            }
            let body = try await BodyDeadline.collect(request, upTo: 1 << 20, within: .seconds(10), channel: context.channel)
            let asked: Asked<Question>
            do {
                asked = try JSONDecoder().decode(Asked<Question>.self, from: Data(body.readableBytesView))
            } catch {
                return Response.jsonError(.badRequest, "invalid_question", "\(error)")
            }
            guard let answered = try await answer(asked.question, asked.partitions) else {
                return ReadForwarding.unavailable("this instance does not run every partition asked about: retry")
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(answered))))
        }
    }
}
