"""SmolLM2-135M-Instruct, a modern decoder (GQA, RoPE, RMSNorm), on several prompts: one head recomputed step by step
from the layer's input and the model's own weights equals the model's attention (``output_attentions``); the heads'
shares sum to the layer's attention output; the query head -> key/value head mapping is transformers' ``repeat_kv``;
our rotation is ``apply_rotary_pos_emb``; greedy decoding of a fixed prompt is stable; a missing package and an altered
file say so.

The converted cache: its files are the pinned ones; the model loaded from it is the GGUF model (loaded here the slow
way, once) with its matrices rounded to bfloat16, bit for bit, and its outputs stay within the stated tolerance; its
tokenizer is the GGUF file's; an altered cache is found and converted again (one real conversion, ~12 s), a
conversion that still differs is refused, and an unwritable cache folder falls back to the temp dir."""

from __future__ import annotations

import shutil
import tempfile

import pytest
import torch

from attention_core.checkpoints import sha256_of
from attention_core.errors import InputError
from attention_core.smollm2 import checkpoint
from attention_core.smollm2.model import (
    ATTENTION_TOLERANCE,
    PROBABILITY_TOLERANCE,
    Bfloat16Linear,
    head_step,
    load_decoder,
    run_prompt,
)

PROMPTS = ["The capital of France is", "Attention is all you need", "猫坐在垫子上。 🐈 ¿Qué?"]


@pytest.fixture(scope="module")
def decoder():
    return load_decoder()


@pytest.fixture(scope="module")
def gguf():
    """(model, tokenizer) read straight from the GGUF file in this process, float32: the reference."""
    return checkpoint.load_gguf(checkpoint.model_file())


def test_the_model_is_the_one_the_page_describes(decoder):
    assert (decoder.num_layers, decoder.num_heads, decoder.num_kv_heads, decoder.head_dim, decoder.hidden_size) == (
        30, 9, 3, 64, 576)
    assert decoder.rope_theta == 100000.0
    assert type(decoder.model).__name__ == "LlamaForCausalLM"
    assert decoder.model.config._attn_implementation == "eager" and not decoder.model.training


def test_the_cache_holds_exactly_the_pinned_files(decoder):
    folder = checkpoint.cache_folder()
    assert sorted(p.name for p in folder.iterdir()) == sorted(checkpoint.CACHE_SHA256)
    assert sha256_of(folder / checkpoint.WEIGHTS_FILE) == (
        checkpoint.CACHE_SHA256[checkpoint.WEIGHTS_FILE]) == (
        "6da8541543e8104a2eb89bc400be8b40f56b537b0ef9704504986df754d36703")
    assert {name: sha256_of(folder / name) for name in checkpoint.CACHE_SHA256} == dict(
        checkpoint.CACHE_SHA256)
    assert checkpoint.cache_mismatch(folder) is None
    assert (folder / checkpoint.WEIGHTS_FILE).stat().st_size == 269_130_328  # half the float32 538 MB


def test_the_cached_model_is_the_gguf_model_with_its_matrices_rounded_to_bfloat16(decoder, gguf):
    reference, cached = gguf[0].state_dict(), decoder.model.state_dict()
    assert list(cached) == list(reference) and len(cached) == 273
    matrices = 0
    for name, want in reference.items():
        got = cached[name]
        assert want.dtype == torch.float32, name
        if want.ndim == 2:  # q/k/v/o, gate/up/down, the embedding and its tied lm_head
            matrices += 1
            assert got.dtype == torch.bfloat16 and torch.equal(got, want.to(torch.bfloat16)), name
        else:  # the RMSNorm weights, float32 as in the GGUF file
            assert got.dtype == torch.float32 and torch.equal(got, want), name
    assert matrices == 30 * 7 + 2
    model = decoder.model
    assert model.lm_head.weight is model.model.embed_tokens.weight  # tied, stored once
    assert torch.equal(model.model.rotary_emb.inv_freq, gguf[0].model.rotary_emb.inv_freq)
    assert not [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.device.type != "cpu"]
    assert model.generation_config.to_dict() == gguf[0].generation_config.to_dict()


def test_the_model_computes_in_float32(decoder):
    run = run_prompt(decoder, PROMPTS[0])
    assert run.hidden_states.dtype == run.attentions.dtype == run.next_token_probs.dtype == torch.float32
    seed = torch.Generator().manual_seed(0)
    for linear in (decoder.model.model.layers[3].mlp.down_proj, decoder.model.lm_head):  # lm_head: 12 parts
        assert type(linear) is Bfloat16Linear and linear.weight.dtype == torch.bfloat16
        x = torch.randn(2, 5, linear.in_features, generator=seed)
        y = linear(x)
        assert y.dtype == torch.float32 and y.shape == (2, 5, linear.out_features)
        torch.testing.assert_close(y, x @ linear.weight.float().T, rtol=0, atol=1e-5)


def test_bfloat16_storage_costs_no_more_than_the_stated_tolerance(decoder, gguf):
    model, tokenizer = gguf
    largest = [0.0, 0.0]
    for prompt in PROMPTS:
        run = run_prompt(decoder, prompt)
        ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
        assert torch.equal(ids[0], run.input_ids)
        with torch.no_grad():
            out = model(input_ids=ids, output_attentions=True)
        attention = (run.attentions - torch.stack(out.attentions)[:, 0]).abs().max().item()
        probs = torch.softmax(out.logits[0, -1], -1)
        probability = (run.next_token_probs - probs).abs().max().item()
        largest = [max(largest[0], attention), max(largest[1], probability)]
        assert int(run.next_token_probs.argmax()) == int(probs.argmax())
    # measured: 0.0098 and 0.0037; not 0 either (the weights are rounded, it is not the float32 model)
    assert 1e-4 < largest[0] <= ATTENTION_TOLERANCE and 1e-4 < largest[1] <= PROBABILITY_TOLERANCE
    ids = tokenizer("The capital of France is", return_tensors="pt")
    want = model.generate(**ids, max_new_tokens=20, do_sample=False)
    assert torch.equal(decoder.model.generate(**ids, max_new_tokens=20, do_sample=False), want)
    assert tokenizer.decode(want[0, ids["input_ids"].shape[1]:]).startswith(" Paris.")


TEXTS = ["The capital of France is", "  Leading spaces, tabs\tand\nnewlines.", "猫坐在垫子上。注意力机制",
         "Emoji: 🐈‍⬛ 👩🏽‍💻 🇫🇷!", "¿Qué? naïve café — Ünïcödé", "def f(x):\n    return x**2  # code",
         "<|im_start|>user\nHi<|im_end|>", ""]


def test_the_cached_tokenizer_is_the_gguf_files(decoder, gguf):
    cached, reference = decoder.tokenizer, gguf[1]
    assert type(cached) is type(reference) and len(cached) == len(reference) == 49152
    for text in TEXTS:
        for special in (False, True):
            assert cached(text, add_special_tokens=special)["input_ids"] == reference(
                text, add_special_tokens=special)["input_ids"], (text, special)
        ids = reference(text, add_special_tokens=False)["input_ids"]
        assert cached.decode(ids) == reference.decode(ids)
    assert len(cached("猫坐在垫子上。 🐈")["input_ids"]) > 4  # real tokens, not one unknown
    assert (cached.bos_token_id, cached.eos_token_id, cached.pad_token_id) == (
        reference.bos_token_id, reference.eos_token_id, reference.pad_token_id) == (1, 2, 2)
    messages = [{"role": "user", "content": "What is attention? 注意力 🐈"}]
    for tokenize in (False, True):
        got = cached.apply_chat_template(messages, add_generation_prompt=True, tokenize=tokenize)
        assert got == reference.apply_chat_template(messages, add_generation_prompt=True, tokenize=tokenize)
    assert cached.apply_chat_template(messages, add_generation_prompt=True, tokenize=False).startswith(
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM")


def _flip_a_byte(path, offset=100_000_000):
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 1]))


def test_an_altered_cache_is_found_and_converted_again(decoder, tmp_path, monkeypatch):
    root = tmp_path / "cache"
    # a copy: the shared cache stays whole
    shutil.copytree(checkpoint.cache_folder(), root / checkpoint.CACHE_NAME)
    monkeypatch.setenv(checkpoint.CACHE_ENV, str(root))
    folder = checkpoint.cache_folder()
    assert folder == root / checkpoint.CACHE_NAME
    _flip_a_byte(folder / checkpoint.WEIGHTS_FILE)
    name, got, want = checkpoint.cache_mismatch(folder)
    assert (name == checkpoint.WEIGHTS_FILE and want == checkpoint.CACHE_SHA256[name] and got != want
            and len(got) == 64)
    (root / f".{checkpoint.CACHE_NAME}.new-killed").mkdir()  # what a killed conversion leaves
    conversions = []
    real = checkpoint._run_converter
    monkeypatch.setattr(checkpoint, "_run_converter", lambda *args: conversions.append(args) or real(*args))
    again = load_decoder()  # the real conversion, in a child process: it reproduces the pinned files
    assert len(conversions) == 1 and checkpoint.cache_mismatch(folder) is None
    assert sorted(p.name for p in root.iterdir()) == [checkpoint.CACHE_NAME,
                                                      f"{checkpoint.CACHE_NAME}.lock"]
    for (name, got), want in zip(again.model.state_dict().items(), decoder.model.state_dict().values()):
        assert torch.equal(got, want), name
    load_decoder()  # a whole cache is used as it is
    assert len(conversions) == 1
    (folder / "extra.json").write_text("{}")  # a file that is not the conversion's is found too
    assert checkpoint.cache_mismatch(folder) == ("extra.json", "unexpected", "")


def test_a_conversion_that_still_differs_is_refused_and_removed(tmp_path, monkeypatch):
    monkeypatch.setenv(checkpoint.CACHE_ENV, str(tmp_path))

    def wrong_conversion(path, folder, verify):
        folder.mkdir()
        for name in checkpoint.CACHE_SHA256:
            (folder / name).write_text("not the model")
    monkeypatch.setattr(checkpoint, "_run_converter", wrong_conversion)
    with pytest.raises(InputError) as raised:
        load_decoder()
    assert raised.value.field == "model"
    assert "failed their check right after conversion" in str(raised.value)
    assert not (tmp_path / checkpoint.CACHE_NAME).exists()


def test_a_failing_conversion_says_why(tmp_path):
    with pytest.raises(InputError) as raised:  # a real child process, which fails at once on the missing file
        checkpoint._run_converter(tmp_path / "missing.gguf", tmp_path / checkpoint.CACHE_NAME, True)
    assert "Converting the model file missing.gguf" in str(raised.value)
    assert "missing.gguf" in raised.value.message.params["error"] and raised.value.message.params["code"] == 1
    assert not (tmp_path / checkpoint.CACHE_NAME).exists()


def test_an_unwritable_cache_folder_falls_back_to_the_temp_dir(tmp_path, monkeypatch):
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv(checkpoint.CACHE_ENV, str(blocker / "cache"))  # cannot be created: its parent is a file
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    folder = checkpoint.cache_folder()
    assert folder.parent.parent == tmp_path / "tmp" and folder.name == checkpoint.CACHE_NAME
    assert folder.parent.name.startswith("attention-explorer-") and folder.parent.is_dir()
    monkeypatch.setattr(tempfile, "tempdir", str(blocker / "tmp"))
    with pytest.raises(InputError) as raised:
        checkpoint.cache_folder()
    assert checkpoint.CACHE_ENV in str(raised.value) and raised.value.field == "model"


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("layer, head", [(0, 0), (0, 4), (7, 8), (15, 3), (29, 5)])
def test_one_head_step_by_step_equals_the_models_attention(decoder, prompt, layer, head):
    run = run_prompt(decoder, prompt)
    step = head_step(decoder, run, layer, head)
    torch.testing.assert_close(step.weights, run.attentions[layer, head], rtol=1e-4, atol=1e-5)
    assert torch.isinf(step.masked_scores.triu(1)[step.masked_scores.triu(1) != 0]).all()


def _layer_attention_output(decoder, run, layer):
    captured = {}
    attention = decoder.model.model.layers[layer].self_attn

    def keep(module, args, output) -> None:  # returns None: the output is not replaced
        captured["out"] = output[0]
    handle = attention.register_forward_hook(keep)
    try:
        with torch.no_grad():
            decoder.model(input_ids=run.input_ids[None])
    finally:
        handle.remove()
    return captured["out"][0]  # (T, D)


@pytest.mark.parametrize("layer", [0, 12])
def test_the_heads_shares_sum_to_the_layers_attention_output(decoder, layer):
    run = run_prompt(decoder, PROMPTS[0])
    total = sum(head_step(decoder, run, layer, h).projected for h in range(decoder.num_heads))
    torch.testing.assert_close(total, _layer_attention_output(decoder, run, layer), rtol=1e-4, atol=1e-4)


def test_each_query_head_reads_the_key_value_head_repeat_kv_gives_it(decoder):
    from transformers.models.llama.modeling_llama import repeat_kv

    g, h = decoder.num_kv_heads, decoder.num_heads
    kv = torch.arange(g, dtype=torch.float32).reshape(1, g, 1, 1)  # each key/value head holds its own index
    repeated = repeat_kv(kv, h // g)[0, :, 0, 0]  # (H,)
    assert [decoder.kv_head(r) for r in range(h)] == [int(v) for v in repeated] == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_our_rotation_is_transformers_apply_rotary_pos_emb(decoder):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    run = run_prompt(decoder, PROMPTS[1])
    step = head_step(decoder, run, 3, 2)
    positions = torch.arange(len(run.tokens))[None]
    cos, sin = decoder.model.model.rotary_emb(step.query[None, None], positions)
    q, k = apply_rotary_pos_emb(step.query[None, None], step.key[None, None], cos, sin)
    torch.testing.assert_close(step.query_rotated, q[0, 0], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(step.key_rotated, k[0, 0], rtol=1e-4, atol=1e-4)


def test_greedy_decoding_of_a_fixed_prompt_is_stable(decoder):
    ids = decoder.tokenizer("The capital of France is", return_tensors="pt")
    out = decoder.model.generate(**ids, max_new_tokens=3, do_sample=False)
    assert decoder.tokenizer.decode(out[0, ids["input_ids"].shape[1]:]) == " Paris.\n"
    run = run_prompt(decoder, "The capital of France is")
    assert decoder.tokenizer.decode([int(run.next_token_probs.argmax())]) == " Paris"


def test_an_empty_prompt_is_refused_with_its_field(decoder):
    with pytest.raises(InputError) as raised:
        run_prompt(decoder, "")
    assert raised.value.field == "prompt"


def test_a_missing_package_and_an_altered_file_say_how_to_install_it(tmp_path):
    with pytest.raises(InputError) as raised:
        checkpoint.model_file("no_such_model_package")
    assert "--no-deps -r requirements-models.txt" in str(raised.value)
    altered = tmp_path / checkpoint.GGUF_FILE
    shutil.copyfile(checkpoint.model_file(), altered)
    with open(altered, "r+b") as handle:
        handle.seek(1_000_000)
        byte = handle.read(1)
        handle.seek(1_000_000)
        handle.write(bytes([byte[0] ^ 1]))
    with pytest.raises(InputError) as raised:
        checkpoint.verify_model_file(altered)
    assert "failed its checksum" in str(raised.value)
