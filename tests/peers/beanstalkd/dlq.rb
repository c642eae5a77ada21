# dlq.rb: a producer and workers for tests/integration/dlq_beanstalkd.sh, through beanstalkd's Ruby
# client (beaneater, from Debian) as applications use it:
#   ruby dlq.rb ADDR put TUBE ORDER...   put one job per order, its body {"order":{"id":ORDER},...}
#   ruby dlq.rb ADDR put_raw TUBE BODY   put one job with BODY as it is (no JSON: no id)
#   ruby dlq.rb ADDR put_gone TUBE N     put N jobs and delete them (ids that no longer exist)
#   ruby dlq.rb ADDR bury TUBE N         a failing worker: reserve, release once (a retry), reserve
#                                        again and bury, for N jobs
#   ruby dlq.rb ADDR run TUBE N FILE     a working worker: reserve N jobs, append each body to FILE,
#                                        delete them
#   ruby dlq.rb ADDR jobs                every job that exists, one line each, by id: id tube state
#                                        pri reserves releases buries kicks timeouts body (what a
#                                        read must leave as it was; age and time-left pass on)
require "beaneater"
require "json"

addr, cmd, *args = ARGV
bs = Beaneater.new(addr)
case cmd
when "put"
  args[1..].each do |o|
    bs.tubes[args[0]].put(JSON.generate({order: {id: o}, amount: 12.5, note: "caf\u00e9"}), pri: 100, ttr: 60)
  end
when "put_raw"
  bs.tubes[args[0]].put(args[1], pri: 100, ttr: 60)
when "put_gone"
  args[1].to_i.times { bs.jobs.find(bs.tubes[args[0]].put("gone", pri: 100, ttr: 60)[:id]).delete }
when "bury"
  bs.tubes.watch!(args[0])
  buried = 0
  while buried < args[1].to_i
    job = bs.tubes.reserve(5)
    if job.stats.reserves < 2
      job.release
    else
      job.bury
      buried += 1
    end
  end
when "run"
  bs.tubes.watch!(args[0])
  args[1].to_i.times do
    job = bs.tubes.reserve(5)
    File.open(args[2], "a") { |f| f.puts job.body }
    job.delete
  end
when "jobs"
  (1..bs.stats.total_jobs.to_i + 10).each do |id|
    job = bs.jobs.find(id) or next
    s = job.stats
    puts [id, s.tube, s.state, s.pri, s.reserves, s.releases, s.buries, s.kicks, s.timeouts, job.body].join(" ")
  end
else
  abort "dlq.rb: unknown command #{cmd}"
end
bs.close
