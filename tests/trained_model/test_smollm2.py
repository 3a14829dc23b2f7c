"""SmolLM2-135M-Instruct, a modern decoder (GQA, RoPE, RMSNorm), on several prompts: one head recomputed step by step
from the layer's input and the model's own weights equals the model's attention (``output_attentions``); the heads'
shares sum to the layer's attention output; the query head -> key/value head mapping is transformers' ``repeat_kv``;
our rotation is ``apply_rotary_pos_emb``; greedy decoding of a fixed prompt is stable; a missing package and an altered
file say so."""

from __future__ import annotations

import shutil

import pytest
import torch

from attention_core.errors import InputError
from attention_core.trained_model import smollm2

PROMPTS = ["The capital of France is", "Attention is all you need", "猫坐在垫子上。 🐈 ¿Qué?"]


@pytest.fixture(scope="module")
def decoder():
    return smollm2.load_decoder()


def test_the_model_is_the_one_the_page_describes(decoder):
    assert (decoder.num_layers, decoder.num_heads, decoder.num_kv_heads, decoder.head_dim, decoder.hidden_size) == (
        30, 9, 3, 64, 576)
    assert decoder.rope_theta == 100000.0
    assert type(decoder.model).__name__ == "LlamaForCausalLM"


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("layer, head", [(0, 0), (0, 4), (7, 8), (15, 3), (29, 5)])
def test_one_head_step_by_step_equals_the_models_attention(decoder, prompt, layer, head):
    run = smollm2.run_prompt(decoder, prompt)
    step = smollm2.head_step(decoder, run, layer, head)
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
    run = smollm2.run_prompt(decoder, PROMPTS[0])
    total = sum(smollm2.head_step(decoder, run, layer, h).projected for h in range(decoder.num_heads))
    torch.testing.assert_close(total, _layer_attention_output(decoder, run, layer), rtol=1e-4, atol=1e-4)


def test_each_query_head_reads_the_key_value_head_repeat_kv_gives_it(decoder):
    from transformers.models.llama.modeling_llama import repeat_kv

    g, h = decoder.num_kv_heads, decoder.num_heads
    kv = torch.arange(g, dtype=torch.float32).reshape(1, g, 1, 1)  # each key/value head holds its own index
    repeated = repeat_kv(kv, h // g)[0, :, 0, 0]  # (H,)
    assert [decoder.kv_head(r) for r in range(h)] == [int(v) for v in repeated] == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_our_rotation_is_transformers_apply_rotary_pos_emb(decoder):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    run = smollm2.run_prompt(decoder, PROMPTS[1])
    step = smollm2.head_step(decoder, run, 3, 2)
    positions = torch.arange(len(run.tokens))[None]
    cos, sin = decoder.model.model.rotary_emb(step.query[None, None], positions)
    q, k = apply_rotary_pos_emb(step.query[None, None], step.key[None, None], cos, sin)
    torch.testing.assert_close(step.query_rotated, q[0, 0], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(step.key_rotated, k[0, 0], rtol=1e-4, atol=1e-4)


def test_greedy_decoding_of_a_fixed_prompt_is_stable(decoder):
    ids = decoder.tokenizer("The capital of France is", return_tensors="pt")
    out = decoder.model.generate(**ids, max_new_tokens=3, do_sample=False)
    assert decoder.tokenizer.decode(out[0, ids["input_ids"].shape[1]:]) == " Paris.\n"
    run = smollm2.run_prompt(decoder, "The capital of France is")
    assert decoder.tokenizer.decode([int(run.next_token_probs.argmax())]) == " Paris"


def test_an_empty_prompt_is_refused_with_its_field(decoder):
    with pytest.raises(InputError) as raised:
        smollm2.run_prompt(decoder, "")
    assert raised.value.field == "prompt"


def test_a_missing_package_and_an_altered_file_say_how_to_install_it(tmp_path):
    with pytest.raises(InputError) as raised:
        smollm2.model_file("no_such_model_package")
    assert "--no-deps -r requirements-models.txt" in str(raised.value)
    altered = tmp_path / smollm2.GGUF_FILE
    shutil.copyfile(smollm2.model_file(), altered)
    with open(altered, "r+b") as handle:
        handle.seek(1_000_000)
        byte = handle.read(1)
        handle.seek(1_000_000)
        handle.write(bytes([byte[0] ^ 1]))
    with pytest.raises(InputError) as raised:
        smollm2.verify_model_file(altered)
    assert "failed its checksum" in str(raised.value)
