//! The catalog's entries: every LOINC code of a full Synthea patient and the common wearable
//! and lab codes, each with English and Simplified Chinese names, the scale its units
//! convert on and, where one is well established, an adult reference range.
//!
//! Ranges are adult, sex-independent and cited; an analyte whose range depends on sex or
//! laboratory (hemoglobin, creatinine, ALT) has none rather than a wrong one. Bounds are
//! inclusive, as laboratories print them ("70-99").

use super::{CatalogRange, Indicator};
use crate::units::{self, Scale};

/// Shorthand for a catalog entry without Chinese names, scale or range.
const fn indicator(code: &'static str, display: &'static str, names: &'static [&'static str]) -> Indicator {
    Indicator { code, display, names, chinese: &[], scale: None, range: None }
}

impl Indicator {
    const fn zh(mut self, chinese: &'static [&'static str]) -> Self {
        self.chinese = chinese;
        self
    }

    const fn on(mut self, scale: &'static Scale) -> Self {
        self.scale = Some(scale);
        self
    }

    /// An adult range, `low..=high` in `unit`; `NONE` for a side without a bound.
    const fn adult(mut self, low: f64, high: f64, unit: &'static str) -> Self {
        let low = if low.is_nan() { None } else { Some(low) };
        let high = if high.is_nan() { None } else { Some(high) };
        self.range = Some(CatalogRange { low, high, critical_low: None, critical_high: None, unit });
        self
    }

    const fn critical_below(mut self, value: f64) -> Self {
        if let Some(range) = &mut self.range {
            range.critical_low = Some(value);
        }
        self
    }
}

/// No bound on that side of a range.
const NONE: f64 = f64::NAN;

const GLUCOSE_ZH: &[&str] = &["血糖", "葡萄糖"];
const LDL: &[&str] = &["ldl", "ldl cholesterol", "ldl c", "bad cholesterol"];
const LDL_ZH: &[&str] = &["低密度脂蛋白胆固醇", "低密度脂蛋白", "坏胆固醇"];
const CREATININE: &[&str] = &["creatinine", "serum creatinine", "creat", "cr"];
const CREATININE_ZH: &[&str] = &["肌酐", "血肌酐"];
const EGFR: &[&str] = &["egfr", "gfr", "glomerular filtration rate", "kidney function"];
const EGFR_ZH: &[&str] = &["估算肾小球滤过率", "肾小球滤过率", "肾功能"];
const BUN: &[&str] = &["bun", "urea nitrogen", "blood urea nitrogen", "urea"];
const BUN_ZH: &[&str] = &["尿素氮", "血尿素氮", "尿素"];
const SPO2: &[&str] = &["spo2", "oxygen saturation", "blood oxygen", "pulse oximetry", "o2 saturation", "o2 sat"];
const SPO2_ZH: &[&str] = &["血氧", "血氧饱和度"];

/// The catalog. Where several entries share a name (four glucose codes are all "glucose"),
/// the first is what [`lookup_name`](super::lookup_name) gives, so the one a plain name most
/// often means comes first.
pub(super) static CATALOG: &[Indicator] = &[
    // Glucose: ADA Standards of Care, normal fasting plasma glucose below 100 mg/dL,
    // hypoglycaemia below 70, level 2 (clinically significant) below 54.
    indicator("2339-0", "Glucose [Mass/volume] in Blood", &["glucose", "blood glucose", "blood sugar", "sugar", "glu"])
        .zh(&["血糖", "葡萄糖", "血液葡萄糖"])
        .on(&units::GLUCOSE)
        .adult(70.0, 99.0, "mg/dL")
        .critical_below(54.0),
    indicator(
        "2345-7",
        "Glucose [Mass/volume] in Serum or Plasma",
        &["glucose", "serum glucose", "plasma glucose", "blood sugar", "glu"],
    )
    .zh(&["血糖", "葡萄糖", "血清葡萄糖", "血浆葡萄糖"])
    .on(&units::GLUCOSE)
    .adult(70.0, 99.0, "mg/dL")
    .critical_below(54.0),
    indicator("15074-8", "Glucose [Moles/volume] in Blood", &["glucose", "blood glucose", "blood sugar", "glu"])
        .zh(GLUCOSE_ZH)
        .on(&units::GLUCOSE)
        .adult(70.0, 99.0, "mg/dL")
        .critical_below(54.0),
    indicator(
        "41653-7",
        "Glucose [Mass/volume] in Capillary blood by Glucometer",
        &["glucose", "blood sugar", "capillary glucose", "fingerstick glucose", "glucometer"],
    )
    .zh(&["血糖", "指尖血糖", "末梢血糖", "血糖仪"])
    .on(&units::GLUCOSE)
    .adult(70.0, 99.0, "mg/dL")
    .critical_below(54.0),
    // ADA: an HbA1c below 5.7 % is normal; laboratories print 4.0-5.6.
    indicator(
        "4548-4",
        "Hemoglobin A1c/Hemoglobin.total in Blood",
        &["hba1c", "a1c", "hemoglobin a1c", "haemoglobin a1c", "glycated hemoglobin", "glycohemoglobin"],
    )
    .zh(&["糖化血红蛋白", "糖化"])
    .on(&units::HBA1C)
    .adult(NONE, 5.6, "%"),
    // Blood pressure: AHA/ACC 2017, normal below 120/80 mm Hg; hypotension below 90/60.
    indicator("85354-9", "Blood pressure panel with all children optional", &["blood pressure", "bp", "blood pressure panel"])
        .zh(&["血压"]),
    indicator("8480-6", "Systolic blood pressure", &["systolic", "systolic bp", "bp systolic", "systolic pressure", "sbp"])
        .zh(&["收缩压", "高压", "血压"])
        .on(&units::PRESSURE)
        .adult(90.0, 119.0, "mm[Hg]"),
    indicator(
        "8462-4",
        "Diastolic blood pressure",
        &["diastolic", "diastolic bp", "bp diastolic", "diastolic pressure", "dbp"],
    )
    .zh(&["舒张压", "低压", "血压"])
    .on(&units::PRESSURE)
    .adult(60.0, 79.0, "mm[Hg]"),
    // AHA: a normal resting heart rate is 60 to 100 beats a minute.
    indicator("8867-4", "Heart rate", &["heart rate", "pulse", "pulse rate", "hr", "heartbeat"])
        .zh(&["心率", "脉搏", "脉率"])
        .on(&units::PER_MINUTE)
        .adult(60.0, 100.0, "/min"),
    indicator("40443-4", "Heart rate --resting", &["resting heart rate", "resting hr", "rhr", "resting pulse"])
        .zh(&["静息心率", "心率"])
        .on(&units::PER_MINUTE)
        .adult(60.0, 100.0, "/min"),
    indicator("80404-7", "R-R interval.standard deviation (Heart rate variability)", &["heart rate variability", "hrv", "sdnn"])
        .zh(&["心率变异性"]),
    // MedlinePlus (vital signs): 12 to 20 breaths a minute at rest.
    indicator("9279-1", "Respiratory rate", &["respiratory rate", "breathing rate", "respiration rate", "rr"])
        .zh(&["呼吸频率", "呼吸"])
        .on(&units::PER_MINUTE)
        .adult(12.0, 20.0, "/min"),
    // MedlinePlus (body temperature): 97.0 to 99.0 °F, 36.1 to 37.2 °C.
    indicator("8310-5", "Body temperature", &["temperature", "body temperature", "temp"])
        .zh(&["体温"])
        .on(&units::TEMPERATURE)
        .adult(36.1, 37.2, "Cel"),
    // MedlinePlus (pulse oximetry): 95 % and above is normal.
    indicator("59408-5", "Oxygen saturation in Arterial blood by Pulse oximetry", SPO2)
        .zh(SPO2_ZH)
        .on(&units::PERCENT)
        .adult(95.0, 100.0, "%"),
    indicator("2708-6", "Oxygen saturation in Arterial blood", &["spo2", "sao2", "oxygen saturation", "blood oxygen", "o2 saturation", "o2 sat"])
        .zh(SPO2_ZH)
        .on(&units::PERCENT)
        .adult(95.0, 100.0, "%"),
    indicator("29463-7", "Body weight", &["weight", "body weight", "wt"]).zh(&["体重"]).on(&units::MASS),
    indicator("8302-2", "Body height", &["height", "body height", "stature", "ht"]).zh(&["身高"]).on(&units::LENGTH),
    // WHO: a BMI of 18.5 to 24.9 is a healthy weight for adults.
    indicator("39156-5", "Body mass index (BMI) [Ratio]", &["bmi", "body mass index"])
        .zh(&["体重指数", "身体质量指数"])
        .on(&units::BMI)
        .adult(18.5, 24.9, "kg/m2"),
    indicator("59576-9", "Body mass index (BMI) [Percentile] Per age and sex", &["bmi percentile", "bmi for age"])
        .zh(&["体重指数百分位"]),
    indicator("77606-2", "Weight-for-length Per age and sex", &["weight for length", "weight for length percentile"])
        .zh(&["身长别体重百分位"]),
    indicator("9843-4", "Head Occipital-frontal circumference", &["head circumference", "ofc"]).zh(&["头围"]).on(&units::LENGTH),
    indicator(
        "8289-1",
        "Head Occipital-frontal circumference Percentile",
        &["head circumference percentile", "ofc percentile"],
    )
    .zh(&["头围百分位"]),
    indicator("72514-3", "Pain severity - 0-10 verbal numeric rating [Score] - Reported", &["pain", "pain score", "pain severity"])
        .zh(&["疼痛评分", "疼痛程度", "疼痛"]),
    indicator("72166-2", "Tobacco smoking status", &["smoking status", "smoking", "tobacco"]).zh(&["吸烟状况", "吸烟"]),
    indicator("41982-0", "Percentage of body fat Measured", &["body fat", "body fat percentage", "fat percentage"])
        .zh(&["体脂率", "体脂"])
        .on(&units::PERCENT),
    indicator("8280-0", "Waist Circumference at umbilicus by Tape measure", &["waist", "waist circumference"])
        .zh(&["腰围"])
        .on(&units::LENGTH),
    // Lipids: NCEP ATP III cut-offs as laboratories print them (total below 200 mg/dL, LDL
    // below 100, HDL 40 and above, triglycerides below 150).
    indicator("57698-3", "Lipid panel with direct LDL - Serum or Plasma", &["lipid panel", "lipids", "lipid profile"])
        .zh(&["血脂", "血脂四项"]),
    indicator("2093-3", "Cholesterol [Mass/volume] in Serum or Plasma", &["cholesterol", "total cholesterol", "chol", "tc"])
        .zh(&["总胆固醇", "胆固醇"])
        .on(&units::CHOLESTEROL)
        .adult(NONE, 199.0, "mg/dL"),
    indicator("13457-7", "Cholesterol in LDL [Mass/volume] in Serum or Plasma by calculation", LDL)
        .zh(LDL_ZH)
        .on(&units::CHOLESTEROL)
        .adult(NONE, 99.0, "mg/dL"),
    indicator("18262-6", "Cholesterol in LDL [Mass/volume] in Serum or Plasma by Direct assay", LDL)
        .zh(LDL_ZH)
        .on(&units::CHOLESTEROL)
        .adult(NONE, 99.0, "mg/dL"),
    indicator("2085-9", "Cholesterol in HDL [Mass/volume] in Serum or Plasma", &["hdl", "hdl cholesterol", "hdl c", "good cholesterol"])
        .zh(&["高密度脂蛋白胆固醇", "高密度脂蛋白", "好胆固醇"])
        .on(&units::CHOLESTEROL)
        .adult(40.0, NONE, "mg/dL"),
    indicator("2571-8", "Triglyceride [Mass/volume] in Serum or Plasma", &["triglycerides", "triglyceride", "trig", "tg"])
        .zh(&["甘油三酯", "三酰甘油"])
        .on(&units::TRIGLYCERIDES)
        .adult(NONE, 149.0, "mg/dL"),
    // Kidney: creatinine's range depends on sex and muscle, so none; KDIGO 2012 calls an eGFR
    // below 60 decreased (G3a and below); BUN 6 to 20 mg/dL (MedlinePlus).
    indicator("2160-0", "Creatinine [Mass/volume] in Serum or Plasma", CREATININE)
        .zh(CREATININE_ZH)
        .on(&units::CREATININE),
    indicator("38483-4", "Creatinine [Mass/volume] in Blood", CREATININE).zh(CREATININE_ZH).on(&units::CREATININE),
    indicator(
        "33914-3",
        "Glomerular filtration rate/1.73 sq M.predicted [Volume Rate/Area] in Serum or Plasma by Creatinine-based formula (MDRD)",
        EGFR,
    )
    .zh(EGFR_ZH)
    .on(&units::EGFR)
    .adult(60.0, NONE, "mL/min/{1.73_m2}"),
    indicator(
        "98979-8",
        concat!(
            "Glomerular filtration rate/1.73 sq M.predicted [Volume Rate/Area] in Serum, Plasma or Blood ",
            "by Creatinine-based formula (CKD-EPI 2021)"
        ),
        EGFR,
    )
    .zh(EGFR_ZH)
    .on(&units::EGFR)
    .adult(60.0, NONE, "mL/min/{1.73_m2}"),
    indicator("6299-2", "Urea nitrogen [Mass/volume] in Blood", BUN).zh(BUN_ZH).on(&units::UREA).adult(6.0, 20.0, "mg/dL"),
    indicator("3094-0", "Urea nitrogen [Mass/volume] in Serum or Plasma", BUN)
        .zh(BUN_ZH)
        .on(&units::UREA)
        .adult(6.0, 20.0, "mg/dL"),
    // KDIGO 2012: an albumin-to-creatinine ratio below 30 mg/g is normal (A1).
    indicator(
        "14959-1",
        "Microalbumin/Creatinine [Mass Ratio] in Urine",
        &["uacr", "acr", "albumin creatinine ratio", "microalbumin creatinine ratio", "microalbumin"],
    )
    .zh(&["尿微量白蛋白肌酐比", "尿白蛋白肌酐比", "微量白蛋白"])
    .adult(NONE, 29.0, "mg/g"),
    // Electrolytes and the rest of the metabolic panel: MedlinePlus (sodium 135-145 mEq/L,
    // potassium 3.7-5.2, chloride 96-106, CO2 23-29, calcium 8.5-10.2 mg/dL).
    indicator("51990-0", "Basic metabolic panel - Blood", &["basic metabolic panel", "bmp", "metabolic panel"])
        .zh(&["基础代谢检查", "基础代谢"]),
    indicator(
        "24323-8",
        "Comprehensive metabolic 2000 panel - Serum or Plasma",
        &["comprehensive metabolic panel", "cmp", "metabolic panel"],
    )
    .zh(&["综合代谢检查", "生化全项"]),
    indicator("49765-1", "Calcium [Mass/volume] in Blood", &["calcium", "ca"]).zh(&["钙", "血钙"]).on(&units::CALCIUM).adult(
        8.5,
        10.2,
        "mg/dL",
    ),
    indicator("17861-6", "Calcium [Mass/volume] in Serum or Plasma", &["calcium", "ca", "serum calcium"])
        .zh(&["钙", "血钙"])
        .on(&units::CALCIUM)
        .adult(8.5, 10.2, "mg/dL"),
    indicator("2947-0", "Sodium [Moles/volume] in Blood", &["sodium", "na"])
        .zh(&["钠", "血钠"])
        .on(&units::ELECTROLYTE)
        .adult(135.0, 145.0, "mmol/L"),
    indicator("2951-2", "Sodium [Moles/volume] in Serum or Plasma", &["sodium", "na", "serum sodium"])
        .zh(&["钠", "血钠"])
        .on(&units::ELECTROLYTE)
        .adult(135.0, 145.0, "mmol/L"),
    indicator("6298-4", "Potassium [Moles/volume] in Blood", &["potassium", "k"])
        .zh(&["钾", "血钾"])
        .on(&units::ELECTROLYTE)
        .adult(3.7, 5.2, "mmol/L"),
    indicator("2823-3", "Potassium [Moles/volume] in Serum or Plasma", &["potassium", "k", "serum potassium"])
        .zh(&["钾", "血钾"])
        .on(&units::ELECTROLYTE)
        .adult(3.7, 5.2, "mmol/L"),
    indicator("2069-3", "Chloride [Moles/volume] in Blood", &["chloride", "cl"])
        .zh(&["氯", "血氯"])
        .on(&units::ELECTROLYTE)
        .adult(96.0, 106.0, "mmol/L"),
    indicator("2075-0", "Chloride [Moles/volume] in Serum or Plasma", &["chloride", "cl", "serum chloride"])
        .zh(&["氯", "血氯"])
        .on(&units::ELECTROLYTE)
        .adult(96.0, 106.0, "mmol/L"),
    indicator("20565-8", "Carbon dioxide, total [Moles/volume] in Blood", &["carbon dioxide", "co2", "bicarbonate", "total co2"])
        .zh(&["二氧化碳", "总二氧化碳", "二氧化碳结合力"])
        .on(&units::ELECTROLYTE)
        .adult(23.0, 29.0, "mmol/L"),
    indicator(
        "2028-9",
        "Carbon dioxide, total [Moles/volume] in Serum or Plasma",
        &["carbon dioxide", "co2", "bicarbonate", "total co2"],
    )
    .zh(&["二氧化碳", "总二氧化碳", "二氧化碳结合力"])
    .on(&units::ELECTROLYTE)
    .adult(23.0, 29.0, "mmol/L"),
    // Liver panel: MedlinePlus (albumin 3.4-5.4 g/dL, total protein 6.0-8.3 g/dL, total
    // bilirubin 0.1-1.2 mg/dL, alkaline phosphatase 44-147 U/L).
    indicator("1751-7", "Albumin [Mass/volume] in Serum or Plasma", &["albumin", "alb", "serum albumin"])
        .zh(&["白蛋白", "血清白蛋白"])
        .on(&units::PROTEIN)
        .adult(3.4, 5.4, "g/dL"),
    indicator("2885-2", "Protein [Mass/volume] in Serum or Plasma", &["total protein", "protein", "serum protein"])
        .zh(&["总蛋白", "血清总蛋白"])
        .on(&units::PROTEIN)
        .adult(6.0, 8.3, "g/dL"),
    indicator("1975-2", "Bilirubin.total [Mass/volume] in Serum or Plasma", &["bilirubin", "total bilirubin", "tbil"])
        .zh(&["总胆红素", "胆红素"])
        .on(&units::BILIRUBIN)
        .adult(0.1, 1.2, "mg/dL"),
    indicator(
        "6768-6",
        "Alkaline phosphatase [Enzymatic activity/volume] in Serum or Plasma",
        &["alkaline phosphatase", "alp", "alk phos"],
    )
    .zh(&["碱性磷酸酶"])
    .on(&units::ENZYME)
    .adult(44.0, 147.0, "U/L"),
    indicator(
        "1742-6",
        "Alanine aminotransferase [Enzymatic activity/volume] in Serum or Plasma",
        &["alt", "sgpt", "alanine aminotransferase"],
    )
    .zh(&["谷丙转氨酶", "丙氨酸氨基转移酶"])
    .on(&units::ENZYME),
    indicator(
        "1920-8",
        "Aspartate aminotransferase [Enzymatic activity/volume] in Serum or Plasma",
        &["ast", "sgot", "aspartate aminotransferase"],
    )
    .zh(&["谷草转氨酶", "天门冬氨酸氨基转移酶"])
    .on(&units::ENZYME),
    // Blood count: MedlinePlus (white cells 4,500-11,000 per µL, platelets 150,000-450,000
    // per µL, MCV 80-100 fL); hemoglobin and hematocrit depend on sex, so none.
    indicator(
        "58410-2",
        "Complete blood count (hemogram) panel - Blood by Automated count",
        &["complete blood count", "cbc", "blood count", "hemogram"],
    )
    .zh(&["血常规", "全血细胞计数"]),
    indicator("718-7", "Hemoglobin [Mass/volume] in Blood", &["hemoglobin", "haemoglobin", "hgb", "hb"])
        .zh(&["血红蛋白", "血色素"])
        .on(&units::HEMOGLOBIN),
    indicator("4544-3", "Hematocrit [Volume Fraction] of Blood by Automated count", &["hematocrit", "haematocrit", "hct"])
        .zh(&["红细胞压积", "血细胞比容"])
        .on(&units::PERCENT),
    indicator(
        "6690-2",
        "Leukocytes [#/volume] in Blood by Automated count",
        &["white blood cells", "white cell count", "wbc", "leukocytes"],
    )
    .zh(&["白细胞", "白细胞计数"])
    .on(&units::CELL_COUNT)
    .adult(4.5, 11.0, "10*3/uL"),
    indicator(
        "789-8",
        "Erythrocytes [#/volume] in Blood by Automated count",
        &["red blood cells", "red cell count", "rbc", "erythrocytes"],
    )
    .zh(&["红细胞", "红细胞计数"])
    .on(&units::RED_CELL_COUNT),
    indicator("787-2", "MCV [Entitic volume] by Automated count", &["mcv", "mean corpuscular volume"])
        .zh(&["平均红细胞体积"])
        .on(&units::CELL_VOLUME)
        .adult(80.0, 100.0, "fL"),
    indicator("785-6", "MCH [Entitic mass] by Automated count", &["mch", "mean corpuscular hemoglobin"])
        .zh(&["平均红细胞血红蛋白量"]),
    indicator("786-4", "MCHC [Mass/volume] by Automated count", &["mchc", "mean corpuscular hemoglobin concentration"])
        .zh(&["平均红细胞血红蛋白浓度"])
        .on(&units::HEMOGLOBIN),
    indicator(
        "21000-5",
        "Erythrocyte distribution width [Entitic volume] by Automated count",
        &["rdw", "red cell distribution width", "rdw sd"],
    )
    .zh(&["红细胞分布宽度"])
    .on(&units::CELL_VOLUME),
    indicator(
        "788-0",
        "Erythrocyte distribution width [Ratio] by Automated count",
        &["rdw", "red cell distribution width", "rdw cv"],
    )
    .zh(&["红细胞分布宽度"])
    .on(&units::PERCENT),
    indicator("777-3", "Platelets [#/volume] in Blood by Automated count", &["platelets", "platelet count", "plt"])
        .zh(&["血小板", "血小板计数"])
        .on(&units::CELL_COUNT)
        .adult(150.0, 450.0, "10*3/uL"),
    indicator(
        "32207-3",
        "Platelet distribution width [Entitic volume] in Blood by Automated count",
        &["pdw", "platelet distribution width"],
    )
    .zh(&["血小板分布宽度"])
    .on(&units::CELL_VOLUME),
    indicator("32623-1", "Platelet mean volume [Entitic volume] in Blood by Automated count", &["mpv", "mean platelet volume"])
        .zh(&["平均血小板体积"])
        .on(&units::CELL_VOLUME),
    indicator("770-8", "Neutrophils/100 leukocytes in Blood by Automated count", &["neutrophils", "neutrophil percentage"])
        .zh(&["中性粒细胞百分比", "中性粒细胞"])
        .on(&units::PERCENT),
    indicator("736-9", "Lymphocytes/100 leukocytes in Blood by Automated count", &["lymphocytes", "lymphocyte percentage"])
        .zh(&["淋巴细胞百分比", "淋巴细胞"])
        .on(&units::PERCENT),
    indicator("5905-5", "Monocytes/100 leukocytes in Blood by Automated count", &["monocytes", "monocyte percentage"])
        .zh(&["单核细胞百分比", "单核细胞"])
        .on(&units::PERCENT),
    indicator("713-8", "Eosinophils/100 leukocytes in Blood by Automated count", &["eosinophils", "eosinophil percentage"])
        .zh(&["嗜酸性粒细胞百分比", "嗜酸性粒细胞"])
        .on(&units::PERCENT),
    indicator("706-2", "Basophils/100 leukocytes in Blood by Automated count", &["basophils", "basophil percentage"])
        .zh(&["嗜碱性粒细胞百分比", "嗜碱性粒细胞"])
        .on(&units::PERCENT),
    indicator("751-8", "Neutrophils [#/volume] in Blood by Automated count", &["neutrophils", "neutrophil count", "anc"])
        .zh(&["中性粒细胞计数", "中性粒细胞"])
        .on(&units::CELL_COUNT),
    indicator("731-0", "Lymphocytes [#/volume] in Blood by Automated count", &["lymphocytes", "lymphocyte count"])
        .zh(&["淋巴细胞计数", "淋巴细胞"])
        .on(&units::CELL_COUNT),
    indicator("742-7", "Monocytes [#/volume] in Blood by Automated count", &["monocytes", "monocyte count"])
        .zh(&["单核细胞计数", "单核细胞"])
        .on(&units::CELL_COUNT),
    indicator("711-2", "Eosinophils [#/volume] in Blood by Automated count", &["eosinophils", "eosinophil count"])
        .zh(&["嗜酸性粒细胞计数", "嗜酸性粒细胞"])
        .on(&units::CELL_COUNT),
    indicator("704-7", "Basophils [#/volume] in Blood by Automated count", &["basophils", "basophil count"])
        .zh(&["嗜碱性粒细胞计数", "嗜碱性粒细胞"])
        .on(&units::CELL_COUNT),
    // Urinalysis by test strip (Synthea's diabetic care and wellness visits); results are
    // coded presences, not numbers, so no scale and no range.
    indicator("24357-6", "Urinalysis macro (dipstick) panel - Urine", &["urinalysis", "urine test", "ua"])
        .zh(&["尿常规", "尿液分析"]),
    indicator("5778-6", "Color of Urine", &["urine color", "urine colour"]).zh(&["尿颜色", "尿色"]),
    indicator("5767-9", "Appearance of Urine", &["urine appearance", "urine clarity"]).zh(&["尿液外观", "尿透明度"]),
    indicator("25428-4", "Glucose [Presence] in Urine by Test strip", &["urine glucose"])
        .zh(&["尿糖", "尿葡萄糖"]),
    indicator("5770-3", "Bilirubin.total [Presence] in Urine by Test strip", &["urine bilirubin"])
        .zh(&["尿胆红素"]),
    indicator("2514-8", "Ketones [Presence] in Urine by Test strip", &["urine ketones", "ketones"])
        .zh(&["尿酮体", "酮体"]),
    indicator("5811-5", "Specific gravity of Urine by Test strip", &["urine specific gravity", "specific gravity", "sg"])
        .zh(&["尿比重"]),
    indicator("5803-2", "pH of Urine by Test strip", &["urine ph"]).zh(&["尿酸碱度"]),
    indicator("20454-5", "Protein [Presence] in Urine by Test strip", &["urine protein", "proteinuria"])
        .zh(&["尿蛋白"]),
    indicator("5802-4", "Nitrite [Presence] in Urine by Test strip", &["urine nitrite", "nitrite"]).zh(&["尿亚硝酸盐"]),
    indicator("5794-3", "Hemoglobin [Presence] in Urine by Test strip", &["urine blood", "urine hemoglobin", "hematuria"])
        .zh(&["尿潜血", "尿隐血"]),
    indicator(
        "5799-2",
        "Leukocyte esterase [Presence] in Urine by Test strip",
        &["urine leukocytes", "leukocyte esterase", "urine wbc"],
    )
    .zh(&["尿白细胞酯酶", "尿白细胞"]),
    // Questionnaires Synthea's wellness visits score.
    indicator("55758-7", "Patient Health Questionnaire 2 item (PHQ-2) total score [Reported]", &["phq 2", "phq2", "depression screening"])
        .zh(&["抑郁筛查"]),
    indicator("44261-6", "Patient Health Questionnaire 9 item (PHQ-9) total score [Reported]", &["phq 9", "phq9", "depression score"])
        .zh(&["抑郁评分", "抑郁量表"]),
    indicator("70274-6", "Generalized anxiety disorder 7 item (GAD-7) total score [Reported.PHQ]", &["gad 7", "gad7", "anxiety score"])
        .zh(&["焦虑评分", "焦虑量表"]),
    indicator("75626-2", "Total score [AUDIT-C]", &["audit c", "auditc", "alcohol screening"]).zh(&["饮酒筛查"]),
    // Hormones and vitamins: TSH 0.5-5.0 mIU/L (MedlinePlus); vitamin D below 20 ng/mL is
    // deficient (Institute of Medicine, 2011).
    indicator("62292-8", "25-Hydroxyvitamin D2+D3 [Mass/volume] in Serum or Plasma", &["vitamin d", "vit d", "25 oh vitamin d", "25 hydroxyvitamin d"])
        .zh(&["维生素D", "25羟维生素D"])
        .on(&units::VITAMIN_D)
        .adult(20.0, NONE, "ng/mL"),
    indicator("3016-3", "Thyrotropin [Units/volume] in Serum or Plasma", &["tsh", "thyrotropin", "thyroid stimulating hormone"])
        .zh(&["促甲状腺激素", "促甲状腺素"])
        .on(&units::THYROTROPIN)
        .adult(0.5, 5.0, "m[IU]/L"),
    // Wearables. A step count is usually per interval, so the unspecified-time code is the one
    // "steps" means.
    indicator("55423-8", "Number of steps in unspecified time Pedometer", &["steps", "step count", "pedometer"])
        .zh(&["步数", "计步"]),
    indicator("41950-7", "Number of steps in 24 hour Measured", &["steps", "daily steps", "steps per day", "step count"])
        .zh(&["每日步数", "步数"]),
    indicator("41981-2", "Calories burned", &["calories burned", "active energy", "active calories", "energy burned"])
        .zh(&["消耗热量", "活动能量", "卡路里"])
        .on(&units::ENERGY),
    indicator("93832-4", "Sleep duration", &["sleep", "sleep duration", "sleep time", "time asleep", "hours of sleep"])
        .zh(&["睡眠", "睡眠时长", "睡眠时间"])
        .on(&units::DURATION),
];
