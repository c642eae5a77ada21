# dlq.rb: a job and a driver for tests/integration/dlq_sidekiq.sh, through Sidekiq itself
# (Debian's ruby-sidekiq 6.4): orders pushed as applications push them, the order being the job's
# first argument (so that `qrel dlq`'s id_field args.0 names the work), run by a `sidekiq -r
# ./dlq.rb` process.
#   ruby dlq.rb push QUEUE ORDER...   one ChargeJob per order on QUEUE
# A charge raises while the Redis key skdlq:phase is not "fixed" (the provider is down), or while
# its order is in the set skdlq:poison; with retry: 0 Sidekiq puts it in the dead set at once.
# Once fixed it adds its order to skdlq:ran (a set: a job run twice shows as one, so it also
# counts skdlq:runs). A server middleware records the replay stamp each job arrives with
# (HSET skdlq:stamp ORDER <qrel-replayed or "none">): the key reaches the job and harms nothing.
require "sidekiq"

Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }

class StampSeen
  def call(_worker, job, _queue)
    Sidekiq.redis { |r| r.hset("skdlq:stamp", job["args"][0].to_s, (job["qrel-replayed"] || "none").to_s) }
    yield
  end
end

Sidekiq.configure_server do |c|
  c.redis = {url: ENV.fetch("REDIS_URL")}
  c.server_middleware { |chain| chain.add StampSeen }
end

class ChargeJob
  include Sidekiq::Worker
  sidekiq_options retry: 0

  def perform(order)
    Sidekiq.redis do |r|
      raise "the provider said no" if r.get("skdlq:phase") != "fixed" || r.sismember("skdlq:poison", order)

      r.sadd("skdlq:ran", order)
      r.incr("skdlq:runs")
    end
  end
end

if $PROGRAM_NAME == __FILE__
  cmd, queue, *orders = ARGV
  abort "dlq.rb: unknown command #{cmd}" unless cmd == "push"
  orders.each { |o| ChargeJob.set(queue: queue).perform_async(o) }
end
