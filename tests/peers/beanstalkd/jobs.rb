# jobs.rb: drives a real beanstalkd through its Ruby client (beaneater, from Debian) the way
# producers and workers use it, for tests/integration/beanstalkd.sh:
#   ruby jobs.rb ADDR put TUBE N [TTR [BYTES]]   put N jobs (priority 100; a body of BYTES bytes)
#   ruby jobs.rb ADDR spread PREFIX N            put one job into each of the tubes PREFIX1..PREFIXN
#   ruby jobs.rb ADDR put_delayed TUBE DELAY     put one job delayed by DELAY seconds
#   ruby jobs.rb ADDR bury TUBE                  reserve the next job and bury it (given up)
#   ruby jobs.rb ADDR work TUBE N                reserve the next N jobs and delete each (done)
#   ruby jobs.rb ADDR hold TUBE SECONDS FLAG     reserve the next job, touch FLAG, hold it, then release
#   ruby jobs.rb ADDR overrun TUBE SECONDS       reserve the next job and hold it past its TTR until
#                                                the server counts the timeout (SECONDS at most,
#                                                else exit 1)
#   ruby jobs.rb ADDR stats                      print the server's stats as "key value" lines
#   ruby jobs.rb ADDR tube_stats TUBE            the same for stats-tube TUBE
require "beaneater"

addr, cmd, *args = ARGV
bs = Beaneater.new(addr)
case cmd
when "put"
  tube, n, ttr, bytes = args[0], args[1].to_i, (args[2] || 60).to_i, args[3]&.to_i
  n.times { |i| bs.tubes[tube].put(bytes ? "x" * bytes : "#{tube}-#{i}", pri: 100, ttr: ttr) }
when "spread"
  (1..args[1].to_i).each { |i| bs.tubes["#{args[0]}#{i}"].put("job", pri: 100, ttr: 30) }
when "put_delayed"
  bs.tubes[args[0]].put("#{args[0]}-later", pri: 100, ttr: 60, delay: args[1].to_i)
when "bury"
  bs.tubes.watch!(args[0])
  bs.tubes.reserve(5).bury
when "work"
  bs.tubes.watch!(args[0])
  args[1].to_i.times { bs.tubes.reserve(5).delete }
when "hold"
  bs.tubes.watch!(args[0])
  job = bs.tubes.reserve(5)
  File.write(args[2], job.id.to_s)
  sleep args[1].to_f
  job.release
when "overrun"
  # Holds the job past its TTR until the server has counted the timeout (SECONDS at most; exits 1
  # if it never does): closing the connection earlier would release the job instead. The polling
  # goes over the holder's own connection on purpose. beanstalkd 1.12 checks a reserved job's TTR
  # only when that connection's tick comes due, and it may drop the tick without counting: its
  # clock has microseconds and it computes the tick as exactly the job's deadline, so when its
  # event loop (which sleeps whole milliseconds, then spins) wakes in that same microsecond, the
  # tick is due (tick <= now) but the job is not yet late (deadline >= now), and the connection is
  # not scheduled again. Only a command on that connection schedules it again; a command on any
  # other connection wakes the loop but does not (seen: 25 stats from a second client over 2.5 s,
  # no timeout). So each stats here reschedules the held job's connection, and the first one
  # after the deadline makes the server count the timeout; the next one reads it.
  bs.tubes.watch!(args[0])
  bs.tubes.reserve(5)
  deadline = Time.now + args[1].to_f
  sleep 0.1 until bs.stats.job_timeouts.to_i >= 1 || Time.now > deadline
  abort "jobs.rb: the server counted no timeout in #{args[1]} s" if bs.stats.job_timeouts.to_i < 1
when "stats"
  bs.stats.keys.each { |k| puts "#{k} #{bs.stats[k]}" }
when "tube_stats"
  st = bs.tubes[args[0]].stats
  st.keys.each { |k| puts "#{k} #{st[k]}" }
else
  abort "jobs.rb: unknown command #{cmd}"
end
bs.close
