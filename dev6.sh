source tests/gpu/env.sh; export FNK_CACHE_DIR=/tmp/fnkcache; mkdir -p $OUT/logs
mkdir -p /tmp/o; OUT=/tmp/o bash tests/gpu/run.sh > $OUT/logs/run.log 2>&1; echo "run.sh rc=$?"
cp /tmp/o/bench.log /tmp/o/bench.csv /tmp/o/*.png $OUT/logs/ 2>/dev/null
python3 bench/dit_probe.py --only "torch copy" --only "as the bench" > $OUT/logs/dit.log 2>&1; cat $OUT/logs/dit.log
tail -32 $OUT/logs/run.log
