use super::*;
use openusd::sdf::AbstractData;

const INFO: StageInfo = StageInfo {
    fps: 24.0,
    start_frame: 1.0,
    end_frame: 3.0,
    up_axis: UpAxis::Y,
};

/// A unit quad as two triangles; the diagonal 0–2 is a UV seam (its corners differ per face).
fn quad() -> StagePrim {
    let uvs = FaceVaryingUvs {
        values: vec![
            [0.0, 0.0],
            [0.5, 0.0],
            [0.5, 1.0],
            [0.5, 0.0],
            [1.0, 1.0],
            [0.5, 1.0],
        ],
        indices: vec![0, 1, 2, 3, 4, 5],
    };
    let shape = PrimShape::Mesh {
        face_vertex_counts: vec![3, 3],
        face_vertex_indices: vec![0, 1, 2, 0, 2, 3],
        uvs: Some(uvs),
    };
    StagePrim {
        name: "quad".into(),
        shape,
        collider: false,
    }
}

fn rope() -> StagePrim {
    StagePrim {
        name: "rope".into(),
        shape: PrimShape::Curves {
            curve_vertex_counts: vec![3],
            width: 0.01,
        },
        collider: true,
    }
}

/// Frame `f` of prim `k`: points drift by 0.1 per frame (values that are not short in text).
fn sample(f: usize, k: usize) -> Result<PrimSample> {
    let d = 0.1 * f as f32;
    let points: Vec<[f32; 3]> = match k {
        0 => vec![
            [0.0, d, 0.0],
            [1.0, d, 0.0],
            [1.0, 1.0 + d, 0.0],
            [0.0, 1.0 + d, 1.0 / 3.0],
        ],
        _ => (0..3).map(|i| [i as f32 * 0.3, 2.0 - d, 0.0]).collect(),
    };
    let n = points.len();
    Ok(PrimSample {
        points,
        velocities: Some(vec![[0.0, 2.4, 0.0]; n]),
        normals: Some(vec![[0.0, 0.0, 1.0]; n]),
    })
}

fn encode(prims: &[StagePrim], binary: bool) -> Vec<u8> {
    encode_stage(&INFO, prims, 3, &mut sample, binary).unwrap()
}

fn samples(data: &dyn AbstractData, attr: &str) -> TimeSampleMap {
    let value = data
        .get_field(&Path::new(attr).unwrap(), "timeSamples")
        .unwrap()
        .into_owned();
    value.try_as_time_samples().unwrap()
}

fn bits(v: &Value) -> Vec<u32> {
    match v {
        Value::Vec3fVec(v) => v
            .iter()
            .flat_map(|p| [p.x, p.y, p.z])
            .map(f32::to_bits)
            .collect(),
        other => panic!("not float3[]: {other:?}"),
    }
}

#[test]
fn text_holds_metadata_topology_and_samples() {
    let text = String::from_utf8(encode(&[quad()], false)).unwrap();
    for expected in [
            "defaultPrim = \"quad\"",
            "upAxis = \"Y\"",
            "metersPerUnit = 1.0",
            "timeCodesPerSecond = 24.0",
            "framesPerSecond = 24.0",
            "startTimeCode = 1.0",
            "endTimeCode = 3.0",
            "def Mesh \"quad\"",
            "int[] faceVertexCounts = [3, 3]",
            "int[] faceVertexIndices = [0, 1, 2, 0, 2, 3]",
            "uniform token subdivisionScheme = \"none\"",
            "texCoord2f[] primvars:st = [(0.0, 0.0), (0.5, 0.0), (0.5, 1.0), (0.5, 0.0), (1.0, 1.0), (0.5, 1.0)]",
            "interpolation = \"faceVarying\"",
            "int[] primvars:st:indices = [0, 1, 2, 3, 4, 5]",
            "point3f[] points.timeSamples = {",
            "vector3f[] velocities.timeSamples = {",
            "normal3f[] normals.timeSamples = {",
            "interpolation = \"vertex\"",
            "float3[] extent.timeSamples = {",
            "1.0: [(0.0, 0.0, 0.0), (1.0, 1.0, 0.3333333432674408)],",
            "3.0: [(0.0, 0.20000000298023224, 0.0), (1.0, 1.2000000476837158, 0.3333333432674408)],",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
    assert!(
        !text.contains("4.0:") && !text.contains("0.0: ["),
        "frames are 1..=3:\n{text}"
    );
}

#[test]
fn both_formats_read_back_bit_for_bit() {
    let prims = [quad(), rope()];
    let text = String::from_utf8(encode(&prims, false)).unwrap();
    let from_text = openusd::usda::parse(&text).unwrap();
    let from_crate =
        openusd::usdc::CrateData::open(Cursor::new(encode(&prims, true)), true).unwrap();
    for data in [&from_text as &dyn AbstractData, &from_crate] {
        for (k, prim) in ["/quad", "/rope"].into_iter().enumerate() {
            for (attr, field) in [("points", 0), ("velocities", 1)] {
                let got = samples(data, &format!("{prim}.{attr}"));
                assert_eq!(got.iter().map(|s| s.0).collect::<Vec<_>>(), [1.0, 2.0, 3.0]);
                for (f, (_, value)) in got.iter().enumerate() {
                    let s = sample(f, k).unwrap();
                    let want = if field == 0 {
                        s.points
                    } else {
                        s.velocities.unwrap()
                    };
                    assert_eq!(
                        bits(value),
                        want.iter()
                            .flatten()
                            .map(|x| x.to_bits())
                            .collect::<Vec<_>>()
                    );
                }
            }
        }
        let st = data
            .get_field(&Path::new("/quad.primvars:st:indices").unwrap(), "default")
            .unwrap();
        assert_eq!(*st, Value::IntVec(vec![0, 1, 2, 3, 4, 5]));
        assert!(
            !data.has_spec(&Path::new("/rope.normals").unwrap()),
            "curves get no normals"
        );
        let mark = data
            .get_field(
                &Path::new("/rope.userProperties:xpbd:collider").unwrap(),
                "default",
            )
            .unwrap();
        assert_eq!(*mark, Value::Bool(true));
    }
}

/// What `pixar_compatible` fixes stays fixed: children lists are TokenVectors (type 41), no
/// array shorter than 16 is compressed (bit 61), and the header says 0.8.0.
#[test]
fn crate_fields_are_typed_like_pixar() {
    let bytes = encode(&[quad(), rope()], true);
    assert_eq!(&bytes[..11], b"PXR-USDC\0\x08\0");
    let file = CrateFile::open(Cursor::new(&bytes)).unwrap();
    for field in &file.fields {
        let (name, rep) = (&file.tokens[field.token_index], field.value_rep.0);
        if name == "primChildren" || name == "properties" {
            assert_eq!(rep >> 48, 41, "{name}");
        } else if rep & (1 << 61) != 0 {
            let at = (rep & ((1 << 48) - 1)) as usize;
            assert!(u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) >= 16);
        }
    }
}

#[test]
fn same_input_same_bytes() {
    for binary in [false, true] {
        assert_eq!(
            encode(&[quad(), rope()], binary),
            encode(&[quad(), rope()], binary)
        );
    }
}

#[test]
fn bad_input_is_refused() {
    let mut bad = quad();
    if let PrimShape::Mesh {
        face_vertex_indices,
        ..
    } = &mut bad.shape
    {
        face_vertex_indices[5] = 4;
    }
    let err = encode_stage(&INFO, &[bad], 1, &mut sample, true).unwrap_err();
    assert!(
        format!("{err:#}").contains("face vertex index 4, 4 points"),
        "{err:#}"
    );
    let err = encode_stage(
        &INFO,
        &[StagePrim {
            name: "1x".into(),
            ..quad()
        }],
        1,
        &mut sample,
        true,
    )
    .unwrap_err();
    assert!(err.to_string().contains("not a USD identifier"));
    let err = encode_stage(&INFO, &[quad(), quad()], 1, &mut sample, false).unwrap_err();
    assert!(err.to_string().contains("two objects"));
}

/// An n×n grid of quads (`uvs`: one UV per vertex, indexed per corner).
fn grid(n: usize, uvs: bool) -> StagePrim {
    let mut indices = Vec::new();
    for j in 0..n - 1 {
        for i in 0..n - 1 {
            let v = (j * n + i) as i32;
            indices.extend([v, v + 1, v + 1 + n as i32, v + n as i32]);
        }
    }
    let uvs = uvs.then(|| FaceVaryingUvs {
        values: (0..n * n)
            .map(|k| [(k % n) as f32, (k / n) as f32])
            .collect(),
        indices: indices.clone(),
    });
    let counts = vec![4; (n - 1) * (n - 1)];
    let shape = PrimShape::Mesh {
        face_vertex_counts: counts,
        face_vertex_indices: indices,
        uvs,
    };
    StagePrim {
        name: "grid".into(),
        shape,
        collider: false,
    }
}

/// Frame `f` of an n×n grid: a travelling wave, with velocities and normals.
fn grid_sample(n: usize, f: usize) -> PrimSample {
    let wave = |k: usize| (k as f32 * 0.001 + f as f32).sin();
    let p: Vec<[f32; 3]> = (0..n * n)
        .map(|k| [(k % n) as f32 * 0.013, (k / n) as f32 * 0.017, wave(k)])
        .collect();
    let v = p.iter().map(|q| [q[2], q[0], q[1]]).collect();
    let normals = p.iter().map(|q| [0.0, q[2].cos(), q[2].sin()]).collect();
    PrimSample {
        points: p,
        velocities: Some(v),
        normals: Some(normals),
    }
}

/// Writes /tmp/usdprobe/stage.usd{a,c} (quad, rope, 8×8 grid) for `scripts/check_usd.py`.
#[test]
#[ignore]
fn probe_files() {
    std::fs::create_dir_all("/tmp/usdprobe").unwrap();
    let prims = [quad(), rope(), grid(8, true)];
    let mut probe = |f, k| {
        if k < 2 {
            sample(f, k)
        } else {
            Ok(grid_sample(8, f))
        }
    };
    for (binary, ext) in [(false, "usda"), (true, "usdc")] {
        let bytes = encode_stage(&INFO, &prims, 3, &mut probe, binary).unwrap();
        std::fs::write(format!("/tmp/usdprobe/stage.{ext}"), bytes).unwrap();
    }
}

/// A 256×256 grid (65025 quads), points + velocities + normals, 10 frames, both formats.
#[test]
#[ignore]
fn timing_256_grid() {
    let (n, frames, prim) = (256, 10, grid(256, false));
    let mut grid = |f: usize, _: usize| Ok(grid_sample(n, f));
    for binary in [true, false] {
        let info = StageInfo {
            fps: 24.0,
            start_frame: 0.0,
            end_frame: 9.0,
            up_axis: UpAxis::Z,
        };
        let t = std::time::Instant::now();
        let bytes = encode_stage(
            &info,
            std::slice::from_ref(&prim),
            frames,
            &mut grid,
            binary,
        )
        .unwrap();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        // The sample callback itself (building the vectors) is measured apart and subtracted.
        let t = std::time::Instant::now();
        for f in 0..frames {
            std::hint::black_box(grid(f, 0).unwrap());
        }
        let gen = t.elapsed().as_secs_f64() * 1e3;
        println!(
                "{}: {} bytes total, {:.0} bytes/frame, {:.1} ms total, {:.1} ms/frame encode (+{:.1} ms/frame making samples)",
                if binary { "usdc" } else { "usda" },
                bytes.len(),
                bytes.len() as f64 / frames as f64,
                ms,
                (ms - gen) / frames as f64,
                gen / frames as f64
            );
    }
}
