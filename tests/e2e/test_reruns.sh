#!/usr/bin/env bash
# The same command run again (docs/checkpoints.md, "Running again"): refused before anything is
# written while an earlier run's checkpoints, metrics or saved model are where it writes, naming
# the last step and the two ways on; resumed when asked; started afresh when asked, removing only
# the earlier run's checkpoints. A refused start leaves no directory behind and exits 2. And a
# resume on another number of ranks (another global batch) names the change, and a length in
# epochs still covers the epochs asked (docs/checkpoints.md, "Another world size").
#   test_reruns.sh ZEROTRAIN SOURCE_DIR
source "$(dirname "$0")/e2e_checks.sh"
cd "$tmp" || exit 1

head -c 1000 "$src/data/tinytext/train.txt" >text.txt
shape=(--config zero2 --set data.val= --set data.seq_len=16 --set train_micro_batch_size_per_gpu=1
  --set gradient_accumulation_steps=1)
small=("${shape[@]}" --data text.txt)
zt() { solo "$zerotrain" "${small[@]}" "$@"; }
sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
errors() { grep -c "error:" "$1"; }

# 1. The same command twice: the second is refused with one line, and changes nothing.
run=(--steps 4 --set training.save_interval=2 --output_dir out --set training.save_final=)
zt "${run[@]}" >first.log 2>&1 || fail "first run exited $?: $(tail -3 first.log)"
before=$(sums out)
zt "${run[@]}" >second.log 2>&1
code=$?
[ $code -eq 2 ] || fail "rerun: exit status $code, expected 2: $(tail -3 second.log)"
grep -qF "error: training.checkpoint_dir out/checkpoints holds an earlier run, saved up to step 4 (out/checkpoints/step_00000004)" second.log &&
  grep -qF "resume it with --resume_from_checkpoint (training.resume=latest), or start afresh with --overwrite_output_dir (training.overwrite=true), which removes its checkpoints" second.log ||
  fail "rerun: the refusal does not name the step and both ways on: $(cat second.log)"
[ "$(errors second.log)" -eq 1 ] || fail "rerun: not one error line: $(cat second.log)"
grep -q "| loss" second.log && fail "rerun: it trained: $(cat second.log)"
[ "$(sums out)" = "$before" ] || fail "rerun: the output directory changed"
# --dry-run is refused as the run would be.
zt "${run[@]}" --dry-run >dry.log 2>&1
[ $? -eq 2 ] && grep -qF "holds an earlier run, saved up to step 4" dry.log || fail "--dry-run of a rerun: $(tail -2 dry.log)"

# 2. Resumed when asked: it goes on at the next step, the metrics grow.
lines=$(wc -l <out/metrics.jsonl)
zt --steps 6 --set training.save_interval=2 --output_dir out --set training.save_final= --resume_from_checkpoint \
  >resumed.log 2>&1 || fail "resume exited $?: $(tail -3 resumed.log)"
grep -q "training continues at step 5" resumed.log || fail "resume: not at step 5: $(grep -i resum resumed.log)"
[ "$(wc -l <out/metrics.jsonl)" -gt "$lines" ] || fail "resume: the metrics did not grow"
[ "$(cat out/checkpoints/latest)" = step_00000006 ] || fail "resume: latest is $(cat out/checkpoints/latest)"

# 3. Started afresh when asked: the earlier checkpoints go (`latest` with them), nothing else does.
echo "mine" >out/checkpoints/notes.txt
echo "mine" >out/notes.txt
zt --steps 2 --set training.save_interval=2 --output_dir out --set training.save_final= --overwrite_output_dir \
  >afresh.log 2>&1 || fail "--overwrite_output_dir exited $?: $(tail -3 afresh.log)"
grep -q "step     1/2" afresh.log || fail "--overwrite_output_dir: did not start at step 1"
grep -qF "removed the earlier run's checkpoints in out/checkpoints: latest, step_00000002, step_00000004, step_00000006" afresh.log ||
  fail "--overwrite_output_dir: what it removed is not said: $(grep -i remov afresh.log)"
[ "$(cd out/checkpoints && echo *)" = "latest notes.txt step_00000002" ] || fail "after --overwrite_output_dir: $(ls out/checkpoints)"
[ "$(cat out/checkpoints/latest)" = step_00000002 ] || fail "--overwrite_output_dir: latest is $(cat out/checkpoints/latest)"
[ -f out/notes.txt ] || fail "--overwrite_output_dir removed a file it does not write"
grep -q '"step": 6' out/metrics.jsonl && fail "--overwrite_output_dir: the earlier metrics kept"
# ... but not when an input of the run lies among the checkpoints it would remove.
zt --steps 1 --output_dir out --overwrite_output_dir --set training.init_from=out/checkpoints/step_00000002 >inside.log 2>&1
[ $? -eq 2 ] && grep -qF "and training.init_from 'out/checkpoints/step_00000002' lies there" inside.log ||
  fail "an input among the checkpoints to remove: $(tail -2 inside.log)"
[ -d out/checkpoints/step_00000002 ] || fail "the input was removed"

# 4. A metrics file, a saved model of an earlier run: refused, or replaced when asked.
zt --steps 1 --set training.metrics=m.jsonl >m1.log 2>&1 || fail "metrics run exited $?"
zt --steps 1 --set training.metrics=m.jsonl >m2.log 2>&1
[ $? -eq 2 ] && grep -qE "error: training.metrics m.jsonl holds [0-9]+ lines of an earlier run" m2.log ||
  fail "a second run over m.jsonl: $(tail -2 m2.log)"
zt --steps 1 --set training.metrics=m.jsonl --overwrite_output_dir >m3.log 2>&1 || fail "metrics afresh exited $?"
zt --steps 1 --set training.save_final=final >f1.log 2>&1 || fail "save_final run exited $?"
zt --steps 1 --set training.save_final=final >f2.log 2>&1
[ $? -eq 2 ] && grep -qF "error: training.save_final final holds the model of an earlier run (final/model.safetensors)" f2.log ||
  fail "a second run over save_final: $(tail -2 f2.log)"

# 5. A start refused in set-up (data that is not tokens) exits 2, with one line, and leaves no
#    directory it made.
printf '%s\n' '{"text": "In the beginning"}' >chat.jsonl
solo "$zerotrain" "${shape[@]}" --data chat.jsonl --steps 1 --output_dir fresh/run >bad.log 2>&1
code=$?
[ $code -eq 2 ] || fail "bad data: exit status $code, expected 2: $(tail -2 bad.log)"
[ "$(errors bad.log)" -eq 1 ] || fail "bad data: not one error line: $(cat bad.log)"
[ -e fresh ] && fail "bad data: the refused start left $(find fresh)"
# An output that cannot be made (a file in its way): the others made before it go again.
zt --steps 1 --output_dir fresh/run --set training.log_dir=text.txt/logs >blocked.log 2>&1
code=$?
[ $code -eq 2 ] && grep -q "training.log_dir: cannot create directory 'text.txt/logs'" blocked.log ||
  fail "blocked log_dir: exit status $code: $(tail -2 blocked.log)"
[ -e fresh ] && fail "blocked log_dir: the refused start left $(find fresh)"

# 6. A LoRA run given the model's own directory as its output: refused naming what it writes there,
#    its adapter, never a model's config.json it does not write.
solo "$zerotrain" --model qwen3-tiny --set model.d_model=32 --set model.head_dim=16 --set model.d_ff=64 \
  --data text.txt --set data.val= --set data.seq_len=8 --set train_micro_batch_size_per_gpu=1 --steps 1 \
  --set training.save_final=base >base.log 2>&1 || fail "making a model directory exited $?: $(tail -2 base.log)"
solo "$zerotrain" --model_name_or_path base --data text.txt --set data.val= --set data.seq_len=8 \
  --set 'lora={"r": 4, "alpha": 8, "target_modules": "all-linear"}' --steps 1 --output_dir base >lora.log 2>&1
code=$?
[ $code -eq 2 ] || fail "LoRA output over its model: exit status $code: $(tail -2 lora.log)"
grep -qF "training.save_final is where the run writes the LoRA adapter: adapter_config.json, adapter_model.safetensors" lora.log ||
  fail "LoRA output over its model: the message does not name the adapter: $(grep error lora.log)"
grep "error:" lora.log | grep -q "would write '[^']*config.json'" &&
  fail "LoRA output over its model: says it would write a config.json: $(grep error lora.log)"

# 7. Resumed on 1 rank after 2: the batch halves, and the length in epochs follows it.
"$src/scripts/launch.sh" -n 2 -- "$zerotrain" "${small[@]}" --num_train_epochs 1 --output_dir ep \
  --set training.save_final= >ep2.log 2>&1 || fail "2 ranks exited $?: $(tail -3 ep2.log)"
saved=$(sed 's/step_0*//' ep/checkpoints/latest)
zt --num_train_epochs 2 --output_dir ep --set training.save_final= --resume_from_checkpoint >ep1.log 2>&1 ||
  fail "the resume on 1 rank exited $?: $(tail -3 ep1.log)"
grep -qF "warning: resuming with another batch than the checkpoint's run: 2 -> 1 rows a step (per_device_train_batch_size x gradient_accumulation_steps x ranks: 1 x 1 x 2 -> 1 x 1 x 1); after 1.00 epochs at step $saved, the run ends at step $((saved * 3)) and covers 2.00 epochs" ep1.log ||
  fail "no warning naming the batch and the epochs: $(grep -i 'warn\|length' ep1.log)"
grep -q "give the length in epochs" ep1.log && fail "a length in epochs is told to give one: $(grep 'warning: resuming' ep1.log)"
[ "$(cat ep/checkpoints/latest)" = "$(printf 'step_%08d' $((saved * 3)))" ] ||
  fail "2 epochs at half the batch: ended at $(cat ep/checkpoints/latest), expected step $((saved * 3))"

finish
